"""The README's code blocks, run in the order written, in one folder, with the real model.

Python blocks share one namespace (a later block uses the ``idx`` an earlier one built);
``GeminiLLM()`` talks to the local Gemini stand-in (``GEMINI_API_KEY`` and
``GOOGLE_GEMINI_BASE_URL`` point at it). Bash blocks run line by line in bash, against
files the README names: ``docs/`` (the bundled sample, plus the files its metadata example
names), ``paper.md``, ``report.pdf`` (a 40-page filing), ``filings/``, ``q.jsonl``,
``syn.txt``; ``IDX`` is a folder name. Skipped, each for a stated reason (:data:`SKIP`):
installs, servers (``serve``, ``mcp``, ``curl``, a browser), a Milvus server or a Ray
cluster, the test command itself, and benchmark runs (they write the checkout's results).
A JSON block must parse. A README block that fails to run fails this test, naming it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gemini_server import FakeGemini

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
#: (pattern a bash line matches, why it is not run here)
SKIP = [
    (r"^pip install", "installs: the test runs in the installed checkout"),
    (r"python -m pytest|^ruff check", "the test command itself"),
    (r"proxy-pointer (serve|mcp)\b", "starts a server (tests/serve/ runs them)"),
    (r"^curl\b", "needs a running server"),
    (r"^chromium\b", "needs a running server and a browser (tests/serve/test_inspector.py)"),
    (r"http://HOST|MILVUS_TOKEN=|--executor ray", "needs a Milvus server or a Ray cluster"),
    (r"benchmarks\.", "a benchmark run writes the checkout's benchmarks/results/"),
]
TOPICS = ("revenue", "costs", "margin", "cash", "debt", "equity", "tax", "capital",
          "leases", "pensions", "segments", "inventory", "goodwill")
#: Output a README line shows, not a command ("# --- routed by ...").
COMMENT = re.compile(r"^\s*#")


def blocks() -> list[tuple[int, str, str]]:
    """``(line number, language, text)`` of every fenced block, in order."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m[1], m[2]) for m in BLOCK.finditer(text)]


def runnable(line: str) -> str | None:
    """The command a README bash line runs here, or None when it is skipped."""
    if not line.strip() or COMMENT.match(line):
        return None
    # "pip install ... && proxy-pointer index ...": the parts not skipped
    parts = [p for p in line.split(" && ") if not any(re.search(rx, p) for rx, _ in SKIP)]
    if not parts:
        return None
    line = " && ".join(parts)
    if line.startswith("proxy-pointer"):  # optional arguments: "[--require-token]"
        line = re.sub(r"\s+\[[^\]]*\]", "", line)
    return line.replace(" | less", "")


def _report_pdf(path: Path, pages: int = 40) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    for p in range(1, pages + 1):
        pdf.add_page()
        pdf.set_font("helvetica", "B" if p % 10 == 1 else "", 14 if p % 10 == 1 else 10)
        title = f"PART {'I' * ((p - 1) // 10 + 1)}" if p % 10 == 1 else f"Page {p} text"
        pdf.cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=10)
        words = " ".join(TOPICS[(p * k + k * k) % len(TOPICS)] for k in range(30))
        pdf.multi_cell(0, 5, f"This page discusses {words}, in a sentence of its own.")
    pdf.output(str(path))


def _folder(tmp: Path) -> None:
    """The files the README's examples name."""
    sample = ROOT / "data" / "sample" / "docs"
    shutil.copytree(sample, tmp / "docs")
    shutil.copytree(sample, tmp / "data" / "sample" / "docs")
    for name, text in (("hr/salaries.md", "# Salaries\n\n## CEO\n\nThe CEO is paid 1.\n"),
                       ("board/minutes.md", "# Minutes\n\n## Merger\n\nThe board met.\n")):
        (tmp / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "docs" / name).write_text(text, encoding="utf-8")
    shutil.copy(sample / "1908.05828.md", tmp / "paper.md")
    _report_pdf(tmp / "report.pdf")
    (tmp / "filings").mkdir()
    shutil.copy(tmp / "report.pdf", tmp / "filings" / "report.pdf")
    (tmp / "q.jsonl").write_text(json.dumps({"id": 1, "question": "What is the baseline?"})
                                 + "\n", encoding="utf-8")
    (tmp / "syn.txt").write_text("PTO, paid time off\n", encoding="utf-8")


def script(text: str) -> tuple[str, int]:
    """A bash block as the script run here (skipped lines left out, a heredoc's body kept
    as written), and how many commands it runs."""
    out, ran, heredoc = [], 0, None
    for line in text.replace("\\\n", " ").splitlines():
        if heredoc is not None:
            out.append(line)
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        command = runnable(line)
        if command is not None:
            out.append(command)
            ran += 1
            m = re.search(r"<<\s*'?(\w+)'?", command)
            heredoc = m[1] if m else None
    return "\n".join(out) + "\n", ran


def _bash(text: str, cwd: Path, where: str) -> int:
    body, ran = script(text)
    env = {k: v for k, v in os.environ.items()
           if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "RAY_ADDRESS")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(["bash", "-xeo", "pipefail", "-c", body], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{where}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return ran


@pytest.mark.slow
def test_readme_blocks_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("proxy-pointer", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("the proxy-pointer command is not installed beside this Python")
    _folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    # what the README leaves to the reader: "llm: any LlamaIndex LLM"
    mock = pytest.importorskip("llama_index.core.llms.mock")
    namespace: dict[str, object] = {"__name__": "readme", "llm": mock.MockLLM()}
    ran = {"python": 0, "bash": 0, "json": 0}
    with FakeGemini(api_key="readme-key") as gemini:
        monkeypatch.setenv("GEMINI_API_KEY", "readme-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.base_url)
        for line_no, lang, text in blocks():
            where = f"README.md line {line_no}"
            if lang == "python":
                exec(compile(text, where, "exec"), namespace)
                ran["python"] += 1
            elif lang == "json":
                json.loads(text)
                ran["json"] += 1
            elif lang == "bash":
                ran["bash"] += _bash(text, tmp_path, where)
    assert ran["python"] >= 4 and ran["json"] >= 1 and ran["bash"] >= 20, ran
    assert (tmp_path / ".proxy-pointer-index").is_dir() and (tmp_path / "IDX").is_dir()


def test_every_skipped_readme_line_has_a_reason() -> None:
    """The runner's rules, without running: every bash line is run or matched by a rule
    (so a new README command is run unless a rule names why not)."""
    lines = [line for _, lang, text in blocks() if lang == "bash"
             for line in text.replace("\\\n", " ").splitlines()
             if line.strip() and not COMMENT.match(line)]
    skipped = [line for line in lines if runnable(line) is None]
    assert lines and len(skipped) < len(lines) / 2
    assert all(any(re.search(rx, part) for rx, _ in SKIP) for line in skipped
               for part in line.split(" && "))
    assert runnable("proxy-pointer serve --index IDX [--require-token]") is None
    assert runnable("proxy-pointer query --index IDX q [--where year=2024]") == (
        "proxy-pointer query --index IDX q")
    body, ran = script("cat > m.jsonl <<'JSON'\n{\"a\": [\"hr\"]}\nJSON\nproxy-pointer mcp x\n")
    assert (body, ran) == ("cat > m.jsonl <<'JSON'\n{\"a\": [\"hr\"]}\nJSON\n", 1)
    assert runnable("proxy-pointer convert report.pdf | less  # x") == (
        "proxy-pointer convert report.pdf  # x")


def test_the_http_example_sets_its_token_before_the_server_starts() -> None:
    """``serve`` reads PROXY_POINTER_TOKEN when it starts: exported after it, the example's
    POST /index answers 403 (issue 49)."""
    for _, lang, text in blocks():
        lines = text.splitlines()
        serve = [i for i, ln in enumerate(lines) if ln.startswith("proxy-pointer serve")]
        uses = [i for i, ln in enumerate(lines) if "$PROXY_POINTER_TOKEN" in ln]
        if lang != "bash" or not serve or not uses:
            continue
        exported = [i for i, ln in enumerate(lines) if ln.startswith("export PROXY_POINTER_TOKEN=")]
        assert exported and exported[0] < serve[0] < uses[0], text
