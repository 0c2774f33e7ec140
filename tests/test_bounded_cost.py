"""Hostile input costs what its size says, and nothing more.

* A line longer than ``MAX_LINE_CHARS`` is wrapped when parsed (the stored copy holds the
  wrapped text, a warning names the file), so every per-line step is bounded.
* Tokenizing a document holds a bounded batch of encodings at a time, with the same counts.
* The packer reads closely only the lines it could ever take (``_reach``): the same sections
  as reading every line.
* A file over ``MAX_FILE_BYTES`` is skipped and named; large files are read after the
  others of a run, in memory and when staged on disk.

The 20 MB one-line file itself is measured in ``benchmarks/robustness/bench_hostile.py``.
"""

from __future__ import annotations

import functools
import random
import time
import zipfile
from pathlib import Path

import pytest

from proxy_pointer.convert import docx as docx_module
from proxy_pointer.convert.base import ConversionError
from proxy_pointer.convert.docx import DocxConverter
from proxy_pointer.documents import check_doc_id, escape_doc_id
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import ConfigError
from proxy_pointer.index import Index
from proxy_pointer.ingest import Source, ingest, parse_document, run_order
from proxy_pointer.ingest import pipeline as pipeline_module
from proxy_pointer.parse import cards as cards_module
from proxy_pointer.parse.cards import Card, abbreviates, card_matches, read_card
from proxy_pointer.parse.chunking import ChunkConfig
from proxy_pointer.parse.periods import asked_periods
from proxy_pointer.parse.tree import MAX_LINE_CHARS, split_lines, wrap_long_lines
from proxy_pointer.search import packing
from proxy_pointer.tokens import DocumentTokens, count_tokens_many

WORDS = "the revenue of the company grew while costs fell and margins rose".split()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def test_short_lines_are_left_as_they_are() -> None:
    text = "# A\n\n" + "word " * 100 + "\n"
    assert wrap_long_lines(text, 1000) == (text, ())
    assert wrap_long_lines(text)[0] is text


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_a_long_line_is_wrapped_at_spaces_keeping_offsets(ending: str) -> None:
    line = _words(random.Random(1), 3000)
    text = "# A\n\n" + line + ending + "next line\n"
    out, inserted = wrap_long_lines(text, 1000)
    assert inserted == ()
    assert len(out) == len(text)  # a space became the break: offsets hold
    assert out.replace("\n", " ").replace("\r", " ") == \
        text.replace("\n", " ").replace("\r", " ")
    assert all(len(x.rstrip("\r\n")) <= 1000 for x in split_lines(out))
    assert out.endswith("next line\n")


def test_a_long_run_without_spaces_gets_inserted_breaks() -> None:
    text = "start " + "x" * 2500 + " end\n"
    out, inserted = wrap_long_lines(text, 1000)
    assert out.replace("\n", "") == text.replace("\n", "")
    assert len(out) == len(text) + len(inserted) and len(inserted) == 2
    for k, at in enumerate(inserted):  # each offset in the original text: a break before it
        assert out[at + k] == "\n" and out[at + k + 1] == text[at]
    assert all(len(x.rstrip("\n")) <= 1000 for x in split_lines(out))


def test_parsing_a_long_line_wraps_the_stored_copy_and_says_so() -> None:
    line = _words(random.Random(2), MAX_LINE_CHARS // 3)  # about 2.5 times the limit
    text = "# Report\n\n## Body\n\n" + line + "\n"
    parsed = parse_document(text, "r.md", "docs/r.md", None, ChunkConfig(), False)
    assert parsed.text is not None and parsed.text != text
    assert all(len(x) <= MAX_LINE_CHARS + 1 for x in split_lines(parsed.text))
    assert len(parsed.warnings) == 1 and "docs/r.md" in parsed.warnings[0]
    assert "1 line(s) over 20,000 characters" in parsed.warnings[0]
    # the record's digest is the text read, so an unchanged file stays unchanged
    assert parsed.record.sha256 == parse_document(text, "r.md", "docs/r.md", None,
                                                  ChunkConfig(), False).record.sha256
    normal = parse_document("# R\n\nshort\n", "s.md", "s.md", None, ChunkConfig(), False)
    assert normal.text is None and normal.warnings == ()


def test_page_starts_move_with_inserted_breaks() -> None:
    text = "# P\n\n" + "y" * 45_000 + "\n\nPage two text.\n"
    second = text.index("Page two")
    parsed = parse_document(text, "p.md", "p.md", "markdown", ChunkConfig(), False,
                            pages=(0, second))
    assert parsed.text is not None
    assert parsed.text[parsed.record.pages[1]:].startswith("Page two")


def test_an_index_of_a_wrapped_file_stores_and_answers_from_the_wrapped_text(
        tmp_path: Path) -> None:
    line = _words(random.Random(3), 12_000)  # ~70,000 characters on one line
    (tmp_path / "big.md").write_text("# Big\n\n## Body\n\n" + line + "\n", encoding="utf-8")
    idx = Index(embedder=HashEmbedder(64))
    report = idx.update([tmp_path / "big.md"])
    assert report.added == ("big.md",) and len(report.warnings) == 1
    stored = idx.reader.text("big.md")
    assert max(len(x) for x in split_lines(stored)) <= MAX_LINE_CHARS + 1
    r = idx.retrieve("margins rose", budget=300)
    assert r.sections and r.tokens_used <= 300
    assert all(s.text.replace("[…]", "").strip() for s in r.sections)
    # unchanged on the next run: the digest is the file's, not the wrapped copy's
    assert idx.update([tmp_path / "big.md"]).unchanged == ("big.md",)


def test_tokenizing_in_bounded_batches_counts_the_same() -> None:
    rng = random.Random(4)
    # over 64 runs of 20,000 characters, some lines not plain ASCII
    lines = [_words(rng, rng.randint(1, 3000)) + ("é\n" if i % 7 == 0 else "\n")
             for i in range(420)]
    assert sum(map(len, lines)) > 64 * 20_000
    tokens = DocumentTokens(lines)
    assert tokens.line_counts == count_tokens_many(lines)


def _sections(idx: Index, question: str, budget: int) -> list[tuple[str, str]]:
    r = idx.retrieve(question, budget=budget, k_search=20)
    return [(s.ref, s.text) for s in r.sections]


@pytest.mark.parametrize("budget", [300, 1000])
def test_reading_only_reachable_lines_packs_the_same_sections(
        monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    rng = random.Random(5)
    # a long section of paragraphs and long lines (5,000 characters: under _CUT_CHARS in
    # all, which cuts only the lines of the best hits past it), one part of it on its own
    # subject, and a pipe table
    body = "\n\n".join(_words(rng, rng.choice([40, 40, 40, 900])) for _ in range(300))
    body = body.replace("margins", "quarterly dividend policy", 3)
    table = "| item | 2023 | 2022 |\n|---|---|---|\n" + "".join(
        f"| {_words(rng, 3)} | {rng.randint(1, 999)} | {rng.randint(1, 999)} |\n"
        for _ in range(200))
    idx = Index(embedder=HashEmbedder(64))
    idx.add_texts([("a.md", f"# A\n\n## Long\n\n{body}\n\n## Table\n\n{table}"),
                   ("b.md", "# B\n\n## Other\n\n" + _words(rng, 300) + "\n")])
    questions = ["revenue margins", "costs fell", "quarterly dividend policy", "item 2023"]
    monkeypatch.setattr(packing, "_CUT_CHARS", 10**9)  # the cap aside: reach alone
    reached = [_sections(idx, q, budget) for q in questions]
    real = packing._reach
    read = []

    def everything(*args, **kwargs):
        near = real(*args, **kwargs)
        read.append(int(near.sum()) / max(len(near), 1))
        near[:] = True
        return near

    monkeypatch.setattr(packing, "_reach", everything)
    assert [_sections(idx, q, budget) for q in questions] == reached
    assert min(read) < 1.0  # the reach did leave lines out


def test_a_file_over_the_limit_is_skipped_and_named(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "small.md").write_text("# S\n\nSmall text here.\n", encoding="utf-8")
    (tmp_path / "huge.md").write_text("# H\n\n" + "word " * 2000 + "\n", encoding="utf-8")
    sources = [Source(n, str(tmp_path / n)) for n in ("huge.md", "small.md")]
    run = ingest(sources, embedder=HashEmbedder(16), config=ChunkConfig(), workers=0,
                 max_file_bytes=5000)
    assert run.staged == ["small.md"]
    assert len(run.skipped) == 1 and "huge.md" in run.skipped[0]
    assert "over the 0.0 MB a file may hold" in run.skipped[0]


def _files(tmp_path: Path, big: int) -> list[Path]:
    names = {"a-large.md": big, "b.md": 2000, "c.md": 2000}
    out = []
    for name, size in names.items():
        p = tmp_path / name
        rng = random.Random(name)  # no two files alike: no ties
        p.write_text("# T\n\n" + _words(rng, size // 6) + "\n", encoding="utf-8")
        out.append(p)
    return out


def test_large_files_are_read_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline_module, "LARGE_FILE_BYTES", 10_000)
    files = _files(tmp_path, 50_000)
    sources = [Source(p.name, str(p)) for p in files]
    assert [s.doc_id for s in run_order(sources)] == ["b.md", "c.md", "a-large.md"]
    seen: list[int] = []
    run = ingest(sources, embedder=HashEmbedder(16), config=ChunkConfig(), workers=0,
                 batch_bytes=3000, progress=lambda p: seen.append(p.documents_done))
    assert run.staged == ["b.md", "c.md", "a-large.md"]
    assert seen == sorted(seen) and seen[-1] == 3 and 2 in seen  # the others were done first


def test_large_files_last_when_staged_on_disk(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline_module, "LARGE_FILE_BYTES", 10_000)
    files = _files(tmp_path, 50_000)
    idx = Index(embedder=HashEmbedder(16))
    idx.staging_dir = tmp_path / "scratch"  # stream into a segment, as past SPILL_BYTES
    report = idx.update(files, root=str(tmp_path))
    assert report.added == ("a-large.md", "b.md", "c.md")
    # the streamed segment keeps the order read (held in memory, documents are sorted)
    assert list(idx.reader.documents) == ["b.md", "c.md", "a-large.md"]
    memory = Index(embedder=HashEmbedder(16))
    memory.update(files, root=str(tmp_path))
    q = "revenue margins"
    assert [s.ref for s in idx.retrieve(q).sections] == [s.ref for s in memory.retrieve(q).sections]
    saved = tmp_path / "idx"
    idx.save(saved)
    assert [s.ref for s in Index.load(saved, embedder=HashEmbedder(16)).retrieve(q).sections] \
        == [s.ref for s in memory.retrieve(q).sections]


def test_reach_leaves_out_lines_past_the_budget_from_every_hit() -> None:
    cost = tuple([10] * 100)  # a section body of 100 lines of 10 tokens, from line 5
    near = packing._reach([((50, 52), 1.0)], cost, [40] * 95, 5, 100, 1000)
    on = set(map(int, near.nonzero()[0] + 5))
    # lines within 100 tokens (10 lines) of lines 50-51, and one more after
    assert on == set(range(40, 63))
    # long lines past the character cap: those of the weaker hit stay whole
    cost = tuple([500] * 20)
    chars = [50_000] * 20  # four lines around each hit: the first hit's fill the cap
    near = packing._reach([((2, 3), 0.9), ((15, 16), 0.5)], cost, chars, 0, 10, 100)
    assert bool(near[2]) and not near[15]


# --- every text rule linear, every combination search bounded (issue 48) -------------------
def _best_of_three(fn, arg) -> float:
    times = []
    for _ in range(3):
        t = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t)
    return max(min(times), 1e-4)


@pytest.mark.parametrize("unit", ["jan", "January", "fiscal ", "12/", "Sept. ", "dec 31 "])
def test_period_rules_grow_linearly_with_a_hostile_question(unit: str) -> None:
    """Month-like runs once cost the square of their length ('jan' * 16,666: 25.9 s). The
    time at ten times the length must grow about ten times, not a hundred (a ratio, so
    the machine's speed does not matter)."""
    small, large = unit * 1_000, unit * 10_000
    ratio = _best_of_three(asked_periods, large) / _best_of_three(asked_periods, small)
    assert ratio < 40, ratio


def test_a_card_filter_on_the_period_grows_linearly() -> None:
    card = Card(kind="10-K", period="FY2022", fiscal_year=2022)
    match = functools.partial(card_matches, card, "period")
    ratio = _best_of_three(match, "jan" * 10_000) / _best_of_three(match, "jan" * 1_000)
    assert ratio < 40, ratio


def test_a_long_defined_name_is_matched_in_polynomial_steps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cover's defined short name against its registrant's name once took time
    exponential in the words (13 minutes at ten nine-letter words): each (letter, word)
    state is now worked out once."""
    calls = []
    real = cards_module._in_order_lengths

    def counted(s: str, start: int, whole: str) -> range:
        calls.append(start)
        return real(s, start, whole)

    monkeypatch.setattr(cards_module, "_in_order_lengths", counted)
    words = ["Abcdefghi", "Bcdefghij", "Cdefghijk", "Defghijkl", "Efghijklm", "Fghijklmn",
             "Ghijklmno", "Hijklmnop", "Ijklmnopq", "Jklmnopqr"]
    short = "".join(w[:3] for w in words) + "x"  # fits every word but the last letter
    assert not abbreviates(short, " ".join(words))
    assert len(calls) <= len(short) * len(words)
    assert abbreviates("".join(w[:2] for w in words), " ".join(words))


def test_a_hostile_cover_reads_its_card() -> None:
    name = " ".join(w.capitalize() for w in ["alphabeta", "gammadelt", "epsilonze", "etathetai",
                                            "iotakappa", "lambdamun", "xiomicron", "pirhosigm",
                                            "tauupsilo", "phichipsi"])
    cover = (f"# FORM 10-K\n\n{name.upper()} (the \"Alga Epsi Iota Pirh Taup\")\n"
             "(Exact name of registrant as specified in its charter)\n")
    card = read_card(cover)
    assert card.kind == "10-K"


def _docx_with(tmp_path: Path, name: str, body_bytes: int) -> Path:
    """A .docx whose document part inflates to about ``body_bytes`` of spaces."""
    path = tmp_path / name
    head = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w='
            '"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>'
            '<w:t xml:space="preserve">Bomb</w:t></w:r></w:p>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas'
                   '.openxmlformats.org/package/2006/content-types"/>')
        with z.open("word/document.xml", "w") as part:
            part.write(head.encode())
            for _ in range(body_bytes // 2**20):
                part.write(b" " * 2**20)
            part.write(b"</w:body></w:document>")
    return path


def test_a_docx_that_inflates_past_the_limit_is_skipped_and_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What is inflated counts, chunk by chunk, against the file-size limit (here lowered
    to 2 MiB): the bomb is refused and named, the other files are indexed."""
    monkeypatch.setattr(docx_module, "MAX_INPUT_BYTES", 2 * 2**20)
    docs = tmp_path / "docs"
    docs.mkdir()
    bomb = _docx_with(docs, "bomb.docx", 8 * 2**20)
    assert bomb.stat().st_size < 100_000
    (docs / "fine.md").write_text("# Fine\n\nA short note about pumps.\n")
    with pytest.raises(ConversionError, match=r"bomb\.docx.*unpacks to more than"):
        DocxConverter().convert(bomb.read_bytes(), "bomb.docx")
    idx = Index(embedder=HashEmbedder(32))
    report = idx.update([docs])
    assert "fine.md" in idx.reader.documents and "bomb.docx" not in idx.reader.documents
    assert any("bomb.docx" in s and "unpacks" in s for s in report.skipped)


@pytest.mark.parametrize("hidden", ["\x85", "\u202e", "\u2028", "\u2029", "\u200b", "\n"])
def test_hidden_characters_in_file_names_are_escaped_and_refused_when_given(
        tmp_path: Path, hidden: str) -> None:
    name = f"invoice{hidden}gpj.md"
    escaped = escape_doc_id(name)
    assert hidden not in escaped and escaped.startswith("invoice%") and escaped.endswith(".md")
    with pytest.raises(ConfigError, match="bad doc id"):
        check_doc_id(name)
    assert check_doc_id("naïve 日本 report.md") == "naïve 日本 report.md"


@pytest.mark.parametrize("unit", ["jan", "working capital ", "3M FY2021 10-K ", "Q2 of FY"])
def test_a_hostile_question_costs_linear_time_end_to_end(unit: str) -> None:
    """Through ``Index.retrieve``: routing, the vocabulary's expansion and BM25 read the
    question; ten times its length costs about ten times, not a hundred."""
    idx = Index(embedder=HashEmbedder(32))
    idx.add_text("a.md", "# 3M 10-K FY2021\n\n## Balance sheet\n\nTotal current assets 12,400.\n")
    ratio = (_best_of_three(idx.retrieve, unit * 10_000)
             / _best_of_three(idx.retrieve, unit * 1_000))
    assert ratio < 40, ratio


def test_spelling_unmapped_glyphs_grows_linearly_with_a_line() -> None:
    """A long run of letters with one unmapped glyph at its end once cost the square of its
    length (20,000 letters: 8.5 s)."""
    from proxy_pointer.convert.pdf.lines import UNMAPPED, Line, repair_ligatures

    def repair(n: int) -> None:
        repair_ligatures([[Line("a" * n + UNMAPPED + "Z " + UNMAPPED + "scal", 0, 10.0,
                                False, 0.0, 0.0)]])

    ratio = _best_of_three(repair, 100_000) / _best_of_three(repair, 10_000)
    assert ratio < 40, ratio

