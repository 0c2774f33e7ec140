"""Tests for ``proxy-pointer index``: summary line, incremental runs, prune, error exits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from proxy_pointer.cli import main
from proxy_pointer.index import Index
from proxy_pointer.stores import current_generation, write_lock

REPO = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(
    r"^(?P<index>.+): (?P<added>\d+) added, (?P<updated>\d+) updated, "
    r"(?P<unchanged>\d+) unchanged, (?P<removed>\d+) removed, (?P<skipped>\d+) skipped; "
    r"(?P<chunks>\d+) chunks \((?P<embedded>\d+) embedded(, (?P<reused>\d+) reused)?"
    r"(, (?P<deduplicated>\d+) deduplicated)?\) in (?P<seconds>\d+\.\d)s "
    r"\[(?P<documents>\d+) documents in index; \d+\.\ds total\]$"
)


def run_index(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str
              ) -> tuple[int, dict[str, str], str]:
    """Run ``proxy-pointer index ARGS --index tmp/idx``: (exit status, summary fields, stderr)."""
    code = main(["index", *args, "--index", str(tmp_path / "idx"),
                 "--cache-dir", str(tmp_path / "cache"), "--quiet"])
    out, err = capsys.readouterr()
    fields: dict[str, str] = {}
    if code == 0:
        lines = out.strip().splitlines()
        assert len(lines) == 1, out
        m = SUMMARY.match(lines[0])
        assert m, lines[0]
        fields = m.groupdict()
    return code, fields, err


def _counts(fields: dict[str, str]) -> tuple[int, ...]:
    return tuple(int(fields[k]) for k in ("added", "updated", "unchanged", "removed", "skipped"))


def test_index_twice_is_incremental(capsys, docs: Path, tmp_path: Path) -> None:
    code, first, err = run_index(capsys, tmp_path, str(docs), "--embedder", "hash:64")
    assert code == 0 and err == ""
    assert _counts(first) == (3, 0, 0, 0, 0)
    assert first["index"] == str(tmp_path / "idx")
    assert int(first["chunks"]) == int(first["embedded"]) > 0
    assert first["documents"] == "3"

    path = docs / "observatory.md"
    path.write_text(path.read_text().replace("two metre mirror", "four metre segmented mirror"))
    # No --embedder: the index's manifest names it.
    code, second, _ = run_index(capsys, tmp_path, str(docs))
    assert code == 0
    assert _counts(second) == (0, 1, 2, 0, 0)
    assert second["chunks"] == first["chunks"]
    assert int(second["embedded"]) == 1  # only the edited section's chunk
    assert int(second["reused"]) >= 1  # the document's other chunks kept their vectors

    code, third, _ = run_index(capsys, tmp_path, str(docs), "--embedder", "hash:64")
    assert _counts(third) == (0, 0, 3, 0, 0) and third["embedded"] == "0"
    idx = Index.load(tmp_path / "idx")
    assert "segmented" in idx.reader.text("observatory.md")


def test_prune(capsys, docs: Path, tmp_path: Path) -> None:
    run_index(capsys, tmp_path, str(docs), "--embedder", "hash:64")
    (docs / "harbor.md").unlink()
    _, kept, _ = run_index(capsys, tmp_path, str(docs))
    assert _counts(kept) == (0, 0, 2, 0, 0) and kept["documents"] == "3"
    _, pruned, _ = run_index(capsys, tmp_path, str(docs), "--prune")
    assert _counts(pruned) == (0, 0, 2, 1, 0) and pruned["documents"] == "2"
    assert "harbor.md" not in Index.load(tmp_path / "idx").reader.documents


def test_skipped_file_warns_and_indexes_the_rest(capsys, docs: Path, tmp_path: Path) -> None:
    (docs / "broken.md").write_bytes(b"# Broken\n\n\xff\xfe bytes\n")
    code, fields, err = run_index(capsys, tmp_path, str(docs), "--embedder", "hash:64")
    assert code == 0
    assert _counts(fields) == (3, 0, 0, 0, 1)
    assert err.startswith("warning: skipped ") and "broken.md" in err
    assert len(err.strip().splitlines()) == 1


def test_approximate_and_root_options(capsys, docs: Path, tmp_path: Path) -> None:
    code, fields, _ = run_index(capsys, tmp_path, str(docs / "harbor.md"), str(docs / "orchard.md"),
                                "--embedder", "hash:64", "--approximate", "--root", str(tmp_path))
    assert code == 0 and fields["added"] == "2"
    manifest = json.loads((current_generation(tmp_path / "idx") / "manifest.json").read_text())
    assert manifest["vector_index"]["kind"] == "ivf"
    seg = tmp_path / "idx" / "segments" / manifest["segments"][0]["name"]
    assert (seg / "ivf.faiss").is_file()
    loaded = Index.load(tmp_path / "idx")
    assert sorted(loaded.reader.documents) == ["docs/harbor.md", "docs/orchard.md"]


def _error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("proxy-pointer: error: "), err
    return lines[0]


def test_errors_exit_1_with_one_line(capsys, docs: Path, tmp_path: Path) -> None:
    code, _, err = run_index(capsys, tmp_path, str(docs / "missing.md"), "--embedder", "hash:64")
    assert code == 1 and "missing.md: no such file" in _error_line(err)

    run_index(capsys, tmp_path, str(docs), "--embedder", "hash:64")
    code, _, err = run_index(capsys, tmp_path, str(docs), "--embedder", "hash:32")
    assert code == 1
    assert "'hash:64', but 'hash:32' was requested" in _error_line(err)

    code, _, err = run_index(capsys, tmp_path, str(docs), "--chunking", "chars")
    assert code == 1 and "other chunking settings" in _error_line(err)

    with write_lock(tmp_path / "idx"):
        code, _, err = run_index(capsys, tmp_path, str(docs))
    assert code == 1 and "another process is writing" in _error_line(err)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.md").write_text("# A\n")
    (tmp_path / "b" / "x.md").write_text("# B\n")
    code, _, err = run_index(capsys, tmp_path, str(tmp_path / "a"), str(tmp_path / "b"))
    assert code == 1 and "duplicate doc id 'x.md'" in _error_line(err)

    gen = current_generation(tmp_path / "idx")
    (gen / "manifest.json").write_text("{not json\n")
    code, _, err = run_index(capsys, tmp_path, str(docs))
    assert code == 1 and "manifest.json: not valid JSON" in _error_line(err)


def test_module_entry_point_reports_errors(docs: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    base = [sys.executable, "-m", "proxy_pointer.cli", "index", "--index", str(tmp_path / "idx"),
            "--cache-dir", str(tmp_path / "cache"), "--embedder", "hash:64"]
    bad = subprocess.run([*base, str(tmp_path / "nowhere")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and bad.stdout == ""
    assert "nowhere: no such file" in _error_line(bad.stderr)
    ok = subprocess.run([*base, str(docs)], cwd=REPO, env=env, capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert SUMMARY.match(ok.stdout.strip())


def test_usage_error_exits_2(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["index"])
    assert e.value.code == 2


def test_workers_and_batch_size_options(capsys, docs: Path, tmp_path: Path) -> None:
    """Tiny batches parsed by a pool give the same index as one batch parsed in-process."""
    code, fields, _ = run_index(capsys, tmp_path / "a", str(docs), "--embedder", "hash:64",
                                "--workers", "2", "--batch-mb", "0.001")
    assert code == 0 and int(fields["added"]) == 3
    code, _, _ = run_index(capsys, tmp_path / "b", str(docs), "--embedder", "hash:64",
                           "--workers", "0")
    assert code == 0
    a, b = Index.load(tmp_path / "a" / "idx"), Index.load(tmp_path / "b" / "idx")
    assert a.reader.chunks == b.reader.chunks and (a.reader.vectors == b.reader.vectors).all()
    code, _, err = run_index(capsys, tmp_path / "c", str(docs), "--embedder", "hash:64",
                             "--workers", "-1")
    assert code == 1 and "workers must be an integer >= 0" in _error_line(err)
    code, _, err = run_index(capsys, tmp_path / "c", str(docs), "--embedder", "hash:64",
                             "--batch-mb", "0")
    assert code == 1 and "batch_bytes must be a positive integer" in _error_line(err)


def test_query_ranking_and_packing_options(capsys, docs: Path, tmp_path: Path) -> None:
    code, _, _ = run_index(capsys, tmp_path, str(docs))
    assert code == 0
    outs = {}
    for packing in ("evidence", "sections"):
        code = main(["query", "--index", str(tmp_path / "idx"), "--json", "--budget", "120",
                     "--mode", "collapsed", "--packing", packing, "telescope mirror"])
        out, _ = capsys.readouterr()
        assert code == 0
        outs[packing] = json.loads(out)
    for out in outs.values():
        assert out["contexts"] and out["tokens_used"] <= 120
    with pytest.raises(SystemExit) as exc:
        main(["query", "--index", str(tmp_path / "idx"), "--mode", "raptor", "q"])
    assert exc.value.code == 2


def test_query_json_is_the_service_payload(capsys, docs: Path, tmp_path: Path) -> None:
    """``query --json``, Service.query (HTTP /query, MCP search) and Retrieval.to_dict are one
    payload, and every context carries the ref that opens it."""
    from proxy_pointer.serve.service import Service

    code, _, _ = run_index(capsys, tmp_path, str(docs))
    assert code == 0
    code = main(["query", "--index", str(tmp_path / "idx"), "--json", "--budget", "300",
                 "telescope mirror"])
    cli = json.loads(capsys.readouterr()[0])
    assert code == 0
    served = Service(str(tmp_path / "idx")).query("telescope mirror", budget=300)
    direct = Index.load(tmp_path / "idx").retrieve("telescope mirror", budget=300).to_dict()
    assert cli == served == json.loads(json.dumps(direct))
    assert cli["contexts"] and all(c["ref"].startswith(c["doc_id"] + "#") for c in cli["contexts"])
    assert set(cli) == {"question", "tokens_used", "budget", "contexts", "omitted", "routing",
                         "expansion", "periods"}
