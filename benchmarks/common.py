"""What every benchmark script shares: paths, reports, the environment stamp, memory,
percentiles and child processes (one module, like bm25s's ``utils/benchmark.py``).

* **Reports.** :func:`write_report` writes ``<stem>.json``, ``<stem>.md`` and, given a plot
  function and matplotlib, ``<stem>.png`` (:func:`pyplot` gives the Agg-backed pyplot);
  :func:`write_json` writes one JSON file atomically.
* **Environment.** :func:`environment` is the stamp every result records: python, platform,
  machine, usable CPUs, load, versions of the packages that shape the numbers, and this
  checkout's git commit (:func:`git_state`).
* **Memory.** :func:`peak_rss_mib` is this process's peak resident memory; a child process's
  tree is measured by :class:`TreePeak` (see there), which :func:`run_child` uses.
* **Percentiles.** :func:`percentile` / :func:`percentiles` (numpy's linear interpolation,
  optionally scaled, e.g. seconds to milliseconds, and rounded).
* **Embedders.** :func:`make_embedder` is a spec's embedder behind the shared embedding
  cache (``proxy_pointer`` imported when called).
* **Children.** :func:`run_child` runs a command and returns its output, exit status, wall
  seconds and the peak memory of its process tree; :func:`bench_command` is the command line
  of another benchmark module (``python -m benchmarks.<name>``).

Nothing here imports ``proxy_pointer``: ``bench_shapes.py`` imports this module before it
decides which checkout's library to measure.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "BENCH",
    "CACHE",
    "DATA",
    "RESULTS",
    "ROOT",
    "WORK",
    "Child",
    "TreePeak",
    "bench_command",
    "cpus",
    "environment",
    "git_state",
    "make_embedder",
    "package_versions",
    "peak_rss_mib",
    "percentile",
    "percentiles",
    "pyplot",
    "run_child",
    "status_mib",
    "write_json",
    "write_markdown",
    "write_report",
]

#: ``benchmarks/``, the repository root, the evaluation data next to the checkout, the
#: committed results, the scratch folder and the embedding cache every benchmark shares.
BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = ROOT.parent / "shared" / "data"
RESULTS = BENCH / "results"
WORK = BENCH / ".work"
CACHE = WORK / "cache"

#: Packages whose versions every environment stamp records (those installed).
PACKAGES = ("proxy-pointer", "numpy", "faiss-cpu", "onnxruntime", "torch",
            "sentence-transformers", "bm25s")


# --------------------------------------------------------------------------- reports

def write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> Path:
    """Write ``obj`` as JSON (UTF-8, non-ASCII kept, trailing newline) through a temporary
    file, so a reader never sees half a file. Creates the folder. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_markdown(path: str | Path, markdown: str | Sequence[str]) -> Path:
    """Write Markdown text, or its lines, ending with one newline. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = markdown if isinstance(markdown, str) else "\n".join(markdown)
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    return path


def pyplot() -> Any | None:
    """``matplotlib.pyplot`` on the Agg backend, or None (with a note) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("[bench] matplotlib is not installed: no plot (pip install matplotlib)",
              file=sys.stderr)
        return None
    return plt


def write_report(out_dir: str | Path, stem: str, data: Any, markdown: str | Sequence[str], *,
                 plot: Callable[[Path], bool] | None = None,
                 indent: int | None = 2) -> dict[str, Path]:
    """Write ``<stem>.json`` (``data``), ``<stem>.md`` (``markdown``: text or lines) and, when
    ``plot`` is given and returns True, the ``<stem>.png`` it drew. Returns the paths by kind
    (``json``, ``md``, ``png``)."""
    out = Path(out_dir)
    paths = {"json": write_json(out / f"{stem}.json", data, indent=indent),
             "md": write_markdown(out / f"{stem}.md", markdown)}
    png = out / f"{stem}.png"
    if plot is not None and plot(png):
        paths["png"] = png
    return paths


# --------------------------------------------------------------------------- environment

def cpus() -> int:
    """CPUs this process may run on (its affinity), else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cpu_kind() -> str:
    """The CPU's model and the features that decide embedding speed, as the library reads
    them (``proxy_pointer.embeddings.cpu``, oneDNN's mask included)."""
    from proxy_pointer.embeddings.cpu import cpu_kind as kind

    return kind().describe()


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed version of each named distribution; the ones not installed are left out."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_state(path: str | Path = ROOT) -> dict[str, Any]:
    """Commit and dirtiness of the checkout at ``path`` (read-only git calls, no index
    refresh): ``dir``, ``commit``, ``dirty`` and the first 50 ``dirty_files`` (tracked files
    only); None where git cannot tell."""
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", "--no-optional-locks", "-C", str(path), *args],
                                  capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    changed = [line[3:] for line in (status or "").splitlines()]
    return {"dir": str(path), "commit": commit.strip() if commit else None,
            "dirty": bool(changed) if status is not None else None,
            "dirty_files": changed[:50]}


def environment(*packages: str) -> dict[str, Any]:
    """The stamp a result records: ``python``, ``platform``, ``machine``, ``processor``,
    ``cpu`` (:func:`cpu_kind`), ``cpus`` (usable), ``cpu_count`` (the machine's),
    ``load_average`` (1, 5, 15 min, when the OS has one), ``packages`` (versions of
    :data:`PACKAGES` and ``packages``, those installed) and ``git`` (this checkout's
    ``commit`` and ``dirty``)."""
    git = git_state(ROOT)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu": cpu_kind(),
        "cpus": cpus(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "packages": package_versions(dict.fromkeys((*PACKAGES, *packages))),
        "git": {"commit": git["commit"], "dirty": git["dirty"]},
    }


# --------------------------------------------------------------------------- memory

def status_mib(field: str, pid: int | str = "self") -> float | None:
    """A size field of a process's ``/proc/PID/status`` (``VmHWM``, ``RssAnon``,
    ``RssFile``, ...; this process by default) in MiB; None where there is no such file
    or field."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return None


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB.

    Linux: ``VmHWM``, not ``ru_maxrss``: Linux carries ``ru_maxrss`` over exec, so a child
    started from a process holding a model would report that process's peak. Elsewhere
    ``resource``'s ``ru_maxrss`` (bytes on macOS, KiB on Linux and the BSDs).
    """
    hwm = status_mib("VmHWM")
    if hwm is not None:
        return hwm
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def _children_maxrss_mib() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


class TreePeak:
    """Peak resident memory of a child process tree, while it runs (a context manager).

    With psutil installed: the largest sum of the resident memory of the process and all its
    descendants, sampled every ``interval`` seconds in a thread (``method`` = ``"psutil"``).
    Without: ``resource``'s ``ru_maxrss`` of the waited-for children, when it rose while the
    tree ran (``method`` = ``"resource"``): the peak of the largest single process, not a sum,
    and on Linux it includes what a child inherited from this process across fork and exec,
    so it is an upper bound; None when it did not rise. ``mib`` holds the result after the
    block (and after the child was waited for).
    """

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid, self.interval = pid, interval
        self.mib: float | None = None
        try:
            self._psutil: Any = importlib.import_module("psutil")  # optional, untyped
        except ImportError:
            self._psutil = None
        self.method = "resource" if self._psutil is None else "psutil"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._before = 0.0

    def _sample(self) -> None:
        ps = self._psutil
        try:
            root = ps.Process(self.pid)
        except ps.Error:
            return
        peak = 0
        while True:
            total = 0
            try:
                procs = [root, *root.children(recursive=True)]
            except ps.Error:
                procs = []
            for p in procs:
                try:
                    total += p.memory_info().rss
                except ps.Error:
                    continue
            peak = max(peak, total)
            self.mib = peak / 2**20 if peak else None
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> TreePeak:
        if self._psutil is not None:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        else:
            self._before = _children_maxrss_mib()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        else:
            after = _children_maxrss_mib()
            self.mib = after if after > self._before else None


# --------------------------------------------------------------------------- percentiles

def percentile(values: Sequence[float] | Any, q: float, *, scale: float = 1.0,
               ndigits: int | None = None, empty: float = math.nan) -> float:
    """The ``q``-th percentile of ``values`` times ``scale`` (numpy's linear interpolation),
    rounded to ``ndigits`` when given; ``empty`` when there are no values."""
    import numpy as np

    if len(values) == 0:
        return empty
    value = float(np.percentile(np.asarray(values, dtype=float) * scale, q))
    return round(value, ndigits) if ndigits is not None else value


def percentiles(values: Sequence[float] | Any, qs: Iterable[float] = (50, 95), *,
                scale: float = 1.0, ndigits: int | None = None,
                empty: float = math.nan) -> dict[str, float]:
    """``{"p50": ..., "p95": ...}`` for each of ``qs`` (100 is called ``max``), as
    :func:`percentile` computes them."""
    return {("max" if q == 100 else f"p{q:g}"): percentile(values, q, scale=scale,
                                                           ndigits=ndigits, empty=empty)
            for q in qs}


# --------------------------------------------------------------------------- children

@dataclass
class Child:
    """A finished child process: its command, exit status, output (None when not
    captured), wall seconds and the peak memory of its process tree (:class:`TreePeak`)."""

    args: list[str]
    returncode: int
    stdout: str | None
    stderr: str | None
    seconds: float
    peak_rss_mib: float | None

    def json(self) -> Any:
        """The last line of the child's output, parsed as JSON (a child's one-line result)."""
        lines = (self.stdout or "").strip().splitlines()
        if not lines:
            raise ValueError(f"{' '.join(self.args)}: printed no result line")
        return json.loads(lines[-1])


def make_embedder(spec: str, cache_dir: str | Path | None) -> Any:
    """The embedder ``spec`` names (:func:`proxy_pointer.embeddings.make_embedder`), behind
    the embedding cache at ``cache_dir`` when given."""
    from proxy_pointer.embeddings import CachedEmbedder
    from proxy_pointer.embeddings import make_embedder as make

    inner = make(spec)
    return CachedEmbedder(inner, cache_dir) if cache_dir else inner


def bench_command(module: str, *args: str | Path) -> list[str]:
    """The command line running ``benchmarks.<module>`` with this interpreter; run it with
    ``cwd=ROOT`` (:func:`run_child` does by default for such commands)."""
    return [sys.executable, "-m", f"benchmarks.{module}", *map(str, args)]


def run_child(cmd: Sequence[str | Path], *, env: Mapping[str, str] | None = None,
              cwd: str | Path | None = None, input: str | None = None, capture: bool = True,
              check: bool = True, interval: float = 0.1) -> Child:
    """Run ``cmd`` to its end; the :class:`Child` with its output, seconds and tree peak.

    ``capture``: keep stdout and stderr (as text) rather than let them through; ``input`` is
    sent to its stdin. ``check``: raise :class:`subprocess.CalledProcessError` on a non-zero
    exit (with the output, when captured). A ``python -m benchmarks.<name>`` command runs in
    the repository root unless ``cwd`` says otherwise.
    """
    args = [str(a) for a in cmd]
    if cwd is None and len(args) > 2 and args[1] == "-m" and args[2].startswith("benchmarks."):
        cwd = ROOT
    pipe = subprocess.PIPE if capture else None
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=None if env is None else dict(env), text=True,
                            stdin=subprocess.PIPE if input is not None else None,
                            stdout=pipe, stderr=pipe)
    with TreePeak(proc.pid, interval) as peak:
        try:
            out, err = proc.communicate(input)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    child = Child(args, proc.returncode, out, err, time.perf_counter() - t0, peak.mib)
    if check and child.returncode:
        raise subprocess.CalledProcessError(child.returncode, args, out, err)
    return child


def time_views(retrieve: Callable[..., Any], questions: Sequence[str],
               views: Mapping[str, Any], **options: Any
               ) -> dict[str, tuple[list[float], list[float]]]:
    """Each question through every access view in turn (``label -> principal``, a rotating
    order so the views share the machine's state): per view, wall seconds and seconds after
    the query embedding (``Retrieval.timings["embed"]``) of each ``retrieve(q,
    principal=..., **options)``."""
    out: dict[str, tuple[list[float], list[float]]] = {v: ([], []) for v in views}
    labels = list(views)
    for i, q in enumerate(questions):
        for label in labels[i % len(labels):] + labels[:i % len(labels)]:
            t = time.perf_counter()
            res = retrieve(q, principal=views[label], **options)
            dt = time.perf_counter() - t
            out[label][0].append(dt)
            out[label][1].append(dt - res.timings.get("embed", 0.0))
    return out

