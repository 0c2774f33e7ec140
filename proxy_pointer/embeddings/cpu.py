"""What this CPU offers for matrix products, and which path the default embedder takes on it.

The default embedder's speed is the CPU's: PyTorch multiplies bfloat16 matrices natively
with Intel AMX (several times float32's rate) or AVX-512 BF16 (about 1.8 times), and
elsewhere bfloat16 is emulated and slower than float32 on ONNX Runtime. ONNX Runtime's int8
products (VNNI or AVX2 integer dot products) are faster still without AMX, but move the
vectors enough to lose questions, so they are an option (``minilm-int8``), not the
default. :func:`cpu_kind` reads the flags once from ``/proc/cpuinfo`` (no import of torch
or ONNX Runtime) and :meth:`CpuKind.document_path` chooses; the figures behind the choice
are in ``benchmarks/results/cpu/any-cpu.md``.

oneDNN's ``ONEDNN_MAX_CPU_ISA`` (the variable that keeps PyTorch off AMX or AVX-512) is
honoured: a feature above the named ISA counts as absent, so a masked machine chooses as a
machine without it would. ONNX Runtime has no such switch; it uses what the CPU has.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

__all__ = ["DOCUMENT_PATHS", "CpuKind", "cpu_kind"]

#: The default embedder's document paths: bfloat16 weights on PyTorch, float32 on ONNX
#: Runtime (one model id: their vectors agree to cosine 0.9998).
DOCUMENT_PATHS = ("bf16", "fp32")

# oneDNN's ISA names, lowest first, and the flags each one adds.
_ISA_LADDER: tuple[tuple[str, frozenset[str]], ...] = (
    ("SSE41", frozenset()),
    ("AVX", frozenset()),
    ("AVX2", frozenset({"avx2"})),
    ("AVX2_VNNI", frozenset({"avx_vnni"})),
    ("AVX2_VNNI_2", frozenset()),
    ("AVX512_CORE", frozenset({"avx512f", "avx512bw"})),
    ("AVX512_CORE_VNNI", frozenset({"avx512_vnni"})),
    ("AVX512_CORE_BF16", frozenset({"avx512_bf16"})),
    ("AVX10_1_512", frozenset()),
    ("AVX512_CORE_FP16", frozenset({"avx512_fp16"})),
    ("AVX10_1_512_AMX", frozenset({"amx_tile", "amx_bf16", "amx_int8"})),
    ("AVX512_CORE_AMX", frozenset()),
    ("AVX10_1_512_AMX_FP16", frozenset({"amx_fp16"})),
    ("AVX512_CORE_AMX_FP16", frozenset()),
)
_ISA_NAMES = [name for name, _ in _ISA_LADDER]
_MASKABLE = frozenset().union(*(flags for _, flags in _ISA_LADDER))


@dataclass(frozen=True)
class CpuKind:
    """The CPU's model name and the matrix-product flags it offers (after ``mask``)."""

    model: str
    flags: frozenset[str]
    #: The ``ONEDNN_MAX_CPU_ISA`` value that was honoured, or None.
    mask: str | None = None

    @property
    def amx(self) -> bool:
        """Intel AMX tiles with bfloat16."""
        return "amx_bf16" in self.flags

    @property
    def bf16(self) -> bool:
        """Native bfloat16 products (AMX or AVX-512 BF16)."""
        return self.amx or "avx512_bf16" in self.flags

    @property
    def vnni(self) -> bool:
        """int8 dot products in one instruction (AVX-512 VNNI or AVX-VNNI)."""
        return bool({"avx512_vnni", "avx_vnni"} & self.flags)

    @property
    def avx2(self) -> bool:
        return "avx2" in self.flags

    def document_path(self) -> str:
        """How the default embedder embeds documents here, one of :data:`DOCUMENT_PATHS`:
        ``"bf16"`` with native bfloat16 (AMX or AVX-512 BF16), else ``"fp32"``."""
        return "bf16" if self.bf16 else "fp32"

    def describe(self) -> str:
        """One line: model, the features that decide, the mask if any."""
        feats = [name for name, on in (("AMX", self.amx), ("AVX-512 BF16", "avx512_bf16" in
                 self.flags), ("VNNI", self.vnni), ("AVX2", self.avx2)) if on]
        masked = f", masked to {self.mask}" if self.mask else ""
        return f"{self.model} ({', '.join(feats) or 'none of AMX, BF16, VNNI, AVX2'}{masked})"


def _masked(flags: frozenset[str], isa: str | None) -> tuple[frozenset[str], str | None]:
    name = (isa or "").strip().upper()
    if name not in _ISA_NAMES:  # unset, "ALL" or unknown: oneDNN ignores it too
        return flags, None
    allowed = frozenset().union(*(f for _, f in _ISA_LADDER[:_ISA_NAMES.index(name) + 1]))
    return frozenset(f for f in flags if f not in _MASKABLE or f in allowed), name


@functools.lru_cache(maxsize=8)
def _read(cpuinfo: str) -> tuple[str, frozenset[str]]:
    model, flags = "unknown CPU", frozenset[str]()
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = frozenset(value.split())
                    break
    except OSError:
        pass
    return model, flags


def cpu_kind(cpuinfo: str = "/proc/cpuinfo", isa: str | None = None) -> CpuKind:
    """This CPU's kind: the first ``flags`` line of ``cpuinfo`` (no flags where there is no
    such file: macOS, Windows), masked by ``isa`` (default: ``ONEDNN_MAX_CPU_ISA``)."""
    model, flags = _read(cpuinfo)
    flags, mask = _masked(flags, os.environ.get("ONEDNN_MAX_CPU_ISA") if isa is None else isa)
    return CpuKind(model, flags, mask)
