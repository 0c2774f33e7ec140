"""The CPU's kind: flags read from /proc/cpuinfo, oneDNN's ISA mask, the default's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy_pointer.embeddings.cpu import DOCUMENT_PATHS, cpu_kind

SAPPHIRE_RAPIDS = ("fpu sse4_2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 "
                   "avx512_fp16 amx_bf16 amx_tile amx_int8 avx_vnni")


def _cpuinfo(tmp_path: Path, flags: str, model: str = "Test CPU") -> str:
    path = tmp_path / f"cpuinfo-{abs(hash((flags, model)))}"
    path.write_text(f"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: {model}\n"
                    f"flags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    return str(path)


def test_each_kind_of_cpu_gets_its_path(tmp_path: Path) -> None:
    cases = {
        SAPPHIRE_RAPIDS: "bf16",
        "avx2 avx512f avx512_vnni avx512_bf16": "bf16",  # AMD EPYC (Zen 4): no AMX
        "avx2 avx512f avx512_vnni": "fp32",  # Cascade Lake
        "avx2 avx_vnni": "fp32",  # Alder Lake
        "avx avx2 fma": "fp32",  # Haswell to Coffee Lake
        "fp asimd asimddp": "fp32",  # an ARM server: nothing measured there
    }
    for flags, path in cases.items():
        kind = cpu_kind(_cpuinfo(tmp_path, flags), isa="")
        assert kind.document_path() == path, flags
        assert path in DOCUMENT_PATHS
    assert cpu_kind(str(tmp_path / "none"), isa="").document_path() == "fp32"  # macOS
    assert cpu_kind(str(tmp_path / "none"), isa="").model == "unknown CPU"


def test_onednn_mask_hides_what_is_above_it(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    info = _cpuinfo(tmp_path, SAPPHIRE_RAPIDS, "Intel Xeon Platinum")
    whole = cpu_kind(info, isa="")
    assert (whole.amx, whole.bf16, whole.vnni, whole.mask) == (True, True, True, None)
    vnni = cpu_kind(info, isa="avx512_core_vnni")  # oneDNN's names, any case
    assert (vnni.amx, vnni.bf16, vnni.vnni, vnni.mask) == (False, False, True,
                                                          "AVX512_CORE_VNNI")
    assert vnni.document_path() == "fp32"  # bfloat16 would be emulated: slower
    assert "fpu" in vnni.flags and "sse4_2" in vnni.flags  # flags oneDNN does not rank stay
    avx2 = cpu_kind(info, isa="AVX2")
    assert (avx2.vnni, avx2.avx2, "avx512f" in avx2.flags) == (False, True, False)
    assert avx2.document_path() == "fp32"
    assert cpu_kind(info, isa="AVX512_CORE_BF16").document_path() == "bf16"
    assert cpu_kind(info, isa="AVX512_CORE_BF16").amx is False
    assert cpu_kind(info, isa="ALL") == whole == cpu_kind(info, isa="no such ISA")
    # By default the mask comes from the environment, as oneDNN reads it.
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert cpu_kind(info) == avx2
    assert avx2.describe() == "Intel Xeon Platinum (AVX2, masked to AVX2)"
    assert whole.describe() == "Intel Xeon Platinum (AMX, AVX-512 BF16, VNNI, AVX2)"
