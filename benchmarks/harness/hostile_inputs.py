"""What each kind of hostile input costs at 1x, 10x and 100x its size, before and after.

Run by ``python -m benchmarks.robustness.bench_hostile --inputs [--baseline DIR]``. Every
measurement
is a child process running the code of one tree (``PYTHONPATH``), stopped at a time limit
(its cost is then "over the limit"); it reports its seconds and its own peak memory
(``VmHWM``). The kinds (issue 48):

* **question**: ``'jan' * n`` asked of a small index with a filing in it
  (``Index.retrieve``: routing reads its periods, BM25 its words); n = 1,666, 16,666 and
  166,660 (5 KB to 500 KB).
* **card filter over HTTP**: ``POST /query`` from an anonymous client with
  ``where: {"period": 'jan' * n}`` against a real server (``proxy-pointer serve`` on
  127.0.0.1, a process of its own, the hash embedder's index of the sample), while
  another client polls ``/healthz`` every 10 ms: the answer's status and seconds, and the
  slowest ``/healthz`` meanwhile; n = 66, 666 and 6,666 (200 bytes to 20 KB).
* **cover**: a 10-K whose "(Exact name of registrant ...)" line is N nine-letter words of
  one letter, with a defined short name in parentheses that almost abbreviates it,
  indexed; N = 7 to 10 words (a count: the old cost grew with it exponentially; a longer
  name is no registrant's name to the card reader).
* **docx**: a .docx whose document part inflates to 2, 20 and 200 MiB of short paragraphs,
  indexed with a small Markdown file beside it: seconds, peak, what was skipped and indexed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ..common import ROOT

__all__ = ["KINDS", "markdown", "measure_all"]

#: What every child script starts with: its imports and its own memory high-water mark.
PRELUDE = """
import json, sys, time
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""

_QUESTION = PRELUDE + """
from proxy_pointer import HashEmbedder, Index
idx = Index.build([sys.argv[1]], embedder=HashEmbedder(64))
idx.add_text("acme-10k.md", "# ACME CORP\\n\\nFORM 10-K\\n\\nFor the fiscal year ended "
             "December 31, 2022\\n\\nACME CORP\\n(Exact name of registrant as specified in "
             "its charter)\\n\\n## Item 8. Financial Statements\\n\\nTotal assets 1,200.\\n")
q = "jan" * int(sys.argv[2])
t = time.perf_counter()
idx.retrieve(q)
print(json.dumps({"seconds": time.perf_counter() - t, "hwm_mib": hwm()}))
"""

_HTTP = PRELUDE + """
import os, socket, subprocess, threading
import httpx
from proxy_pointer import HashEmbedder, Index
Index.build([sys.argv[1]], embedder=HashEmbedder(64)).save(sys.argv[3])
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
# The server in a process of its own, as users run it: a request holding its interpreter
# must not hold the client that measures /healthz.
server = subprocess.Popen([sys.executable, "-m", "proxy_pointer.cli", "serve", "--index",
                           sys.argv[3], "--port", str(port), "--llm", "none",
                           "--log-level", "error"], env=dict(os.environ),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}"
while True:
    try:
        if httpx.get(base + "/healthz").status_code == 200:
            break
    except httpx.TransportError:
        time.sleep(0.05)
worst, done = [0.0], threading.Event()
def poll():
    with httpx.Client(base_url=base, timeout=600) as c:
        while not done.is_set():
            t0 = time.perf_counter(); c.get("/healthz")
            worst[0] = max(worst[0], time.perf_counter() - t0); time.sleep(0.01)
threading.Thread(target=poll, daemon=True).start()
time.sleep(0.2)
t = time.perf_counter()
r = httpx.post(base + "/query", json={"question": "revenue",
                                      "where": {"period": "jan" * int(sys.argv[2])}},
               timeout=600)
seconds = time.perf_counter() - t
time.sleep(0.2); done.set(); time.sleep(0.05)
server.terminate(); server.wait()
print(json.dumps({"seconds": seconds, "status": r.status_code,
                  "healthz_worst_ms": 1000 * worst[0], "hwm_mib": hwm()}))
"""

_INDEX = PRELUDE + """
from proxy_pointer import HashEmbedder, Index
t = time.perf_counter()
idx = Index(embedder=HashEmbedder(64))
report = idx.update([sys.argv[1]])
print(json.dumps({"seconds": time.perf_counter() - t, "indexed": sorted(idx.reader.documents),
                  "skipped": [s[:120] for s in report.skipped], "hwm_mib": hwm()}))
"""

#: kind -> (sizes, the size's label)
KINDS: dict[str, tuple[tuple[int, ...], str]] = {
    "question": ((1_666, 16_666, 166_660), "'jan' x n"),
    "card filter over HTTP": ((66, 666, 6_666), "'jan' x n in where"),
    "cover": ((7, 8, 9, 10), "words in the registrant's name"),
    "docx": ((2, 20, 200), "MiB inflated"),
}


def _child(script: str, args: list[str], code: Path | None, limit: float) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if code is not None:
        env["PYTHONPATH"] = str(code)
    try:
        done = subprocess.run([sys.executable, "-c", script, *args], env=env, cwd=code or ROOT,
                              capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "over": limit}
    if done.returncode != 0:
        return {"seconds": None, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cover(folder: Path, words: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # Words whose letters are all one letter give the abbreviation test the most ways to
    # split a short name, which ends in a letter none of them has.
    names = ["Aaaaaaaaa"] * words
    short = "A" * 38 + "B"
    (folder / "cover.md").write_text(
        f"# FORM 10-K\n\n{' '.join(names).upper()}\n"
        "(Exact name of registrant as specified in its charter)\n\n"
        f"{' '.join(names)} (the \"{short}\") makes pumps.\n", encoding="utf-8")
    return folder


def _docx(folder: Path, mib: int) -> Path:
    """A real Word file (python-docx) into which ``mib`` MiB of short paragraphs inflate,
    and a small Markdown file beside it."""
    import io

    import docx

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fine.md").write_text("# Fine\n\nA short note about pumps.\n", encoding="utf-8")
    made = docx.Document()
    made.add_paragraph("Bomb")
    buf = io.BytesIO()
    made.save(buf)
    paragraph = b"<w:p><w:r><w:t>" + b"word " * 200 + b"</w:t></w:r></w:p>"  # ~1 KB
    with zipfile.ZipFile(buf) as src, \
            zipfile.ZipFile(folder / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename != "word/document.xml":
                out.writestr(info, data)
                continue
            head, tail = data.split(b"<w:sectPr", 1)
            with out.open("word/document.xml", "w") as part:
                part.write(head)
                block = paragraph * 1024  # ~1 MiB
                for _ in range(mib):
                    part.write(block)
                part.write(b"<w:sectPr" + tail)
    return folder


def measure(kind: str, size: int, work: Path, code: Path | None) -> dict[str, Any]:
    """One kind at one size with one tree's code."""
    sample = str(ROOT / "data" / "sample" / "docs")
    if kind == "question":
        return _child(_QUESTION, [sample, str(size)], code, 60)
    if kind == "card filter over HTTP":
        return _child(_HTTP, [sample, str(size), str(work / "idx")], code, 90)
    if kind == "cover":
        return _child(_INDEX, [str(_cover(work / "cover", size))], code, 60)
    return _child(_INDEX, [str(_docx(work / "docx", size))], code, 180)


def measure_all(code: Path | None, log: Any = print) -> dict[str, list[dict[str, Any]]]:
    """Every kind at every size with one tree's code (``None``: this checkout)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for kind, (sizes, _) in KINDS.items():
        out[kind] = []
        for size in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                row = {"size": size, **measure(kind, size, Path(tmp), code)}
            out[kind].append(row)
            log(f"[hostile] {'baseline' if code else 'this'} {kind} {size}: {row}")
    return out


def _cell(row: dict[str, Any]) -> str:
    if row.get("seconds") is None:
        return f"over {row['over']:.0f} s" if "over" in row else f"error {row.get('error')}"
    text = f"{row['seconds']:.2f} s, {row.get('hwm_mib', 0):.0f} MiB"
    if "status" in row:
        text += f", HTTP {row['status']}, /healthz worst {row['healthz_worst_ms']:.0f} ms"
    if "skipped" in row:
        text += f", indexed {len(row['indexed'])}, skipped {len(row['skipped'])}"
    return text


def markdown(after: dict[str, list[dict]], before: dict[str, list[dict]] | None,
             commit: str) -> list[str]:
    """A table per kind: each size, before and after."""
    lines = ["## Hostile inputs at growing sizes (issue 48)", "",
             "Each cell: seconds and the child's peak memory (a run over its time limit was "
             f"stopped). Before: commit {commit or 'n/a'}; after: this checkout; one run.", ""]
    for kind, (_, label) in KINDS.items():
        lines += [f"### {kind}", "", f"| {label} | before | after |", "|---|---|---|"]
        for i, row in enumerate(after[kind]):
            old = _cell(before[kind][i]) if before else "n/a"
            lines.append(f"| {row['size']:,} | {old} | {_cell(row)} |")
        lines.append("")
    return lines
