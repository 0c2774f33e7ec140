"""The pump-station handbook (tests/fixtures/ranking) that the ranking, packing and rerank
tests ask about, and questions whose answers are known.

Each subsection holds one topic, Chapter 1's own text names all of its subsections, Chapter 2
has no text of its own. conftest.py's ``index`` fixture is this handbook indexed.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHAPTER_Q", "CHILD_Q", "DOC", "FIXTURES", "MODES", "PIPES_Q", "twice"]

FIXTURES = Path(__file__).parent / "fixtures" / "ranking"
DOC = "handbook.md"
MODES = ("chunks", "collapsed", "traverse")
CHILD_Q = "Why do bronze impellers erode after storms and when are they replaced?"
CHAPTER_Q = "Which parts does pump maintenance cover, each on its own schedule?"
PIPES_Q = "What slows corrosion of cast iron mains?"


def twice(tmp_path: Path, *, edit: bool = False) -> Path:
    """A corpus that holds the handbook twice: an identical copy, or one with a word changed."""
    root = tmp_path / "corpus"
    (root / "republished").mkdir(parents=True)
    text = (FIXTURES / DOC).read_text()
    (root / DOC).write_text(text)
    copy = text.replace("every quarter", "each quarter") if edit else text
    (root / "republished" / DOC).write_text(copy)
    return root
