"""The inspector page (``proxy_pointer/serve/inspector/``) in a real headless browser.

A uvicorn server over a small index runs in a thread; Chromium loads a shared link
(``/?q=...&budget=...``) and dumps the DOM once the page's fetches are done
(``--dump-dom`` with a virtual time budget). What the page shows is checked against what
``POST /query`` returns for the same question. Skipped where no Chromium is installed
(``apt-get install chromium``); the static checks below run everywhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest
from loopback import serve_asgi

from proxy_pointer.serve.http import INSPECTOR

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
QUESTION = "Which dataset is used for Nepali named entity recognition?"
#: A document whose heading and text hold markup: the page must show it as text.
TAGS_DOC = ("# Lighthouse keepers\n\n"
            "## <img src=x onerror=\"document.title='pwned'\"> Quokka rotations\n\n"
            "The zanzibar lighthouse keepers rotate quokka shifts every fortnight.\n"
            "<script>document.title='pwned'</script>\n")
TAGS_QUESTION = "zanzibar lighthouse keepers quokka shifts"
#: A document only the "ops" group may read (token OPS_TOKEN).
OPS_DOC = "# Furnace rota\n\n## Night shifts\n\nThe furnace night shift rota rotates weekly.\n"
OPS_TOKEN = "ops-token"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


# --- without a browser --------------------------------------------------------------------
def test_the_files_load_nothing_from_elsewhere_and_never_parse_data_as_html() -> None:
    files = {p.name: p.read_text(encoding="utf-8") for p in INSPECTOR.iterdir()}
    assert set(files) == {"index.html", "app.js", "style.css"}
    for name, text in files.items():
        assert not re.search(r"https?://|//cdn|@import", text), name
    js = files["app.js"]
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function"):
        assert sink not in js, sink
    # Every request is relative to the page (works behind a path prefix).
    assert not re.search(r"""(?:api|fetch)\(\s*[`'"]/""", js)
    assert 'src="inspector/app.js"' in files["index.html"]


# --- in a browser ----------------------------------------------------------------------------
def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no Chromium found ({', '.join(BROWSERS)}): apt-get install chromium")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The sample papers plus a document with markup in it, served on a free port."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    pytest.importorskip("fastapi_offline")
    from proxy_pointer.access import Access
    from proxy_pointer.embeddings import HashEmbedder
    from proxy_pointer.index import update_directory
    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.service import Service

    root = tmp_path_factory.mktemp("inspector")
    shutil.copytree(SAMPLE, root / "docs" / "papers")
    (root / "docs" / "notes").mkdir()
    (root / "docs" / "notes" / "tags.md").write_text(TAGS_DOC, encoding="utf-8")
    (root / "docs" / "notes" / "ops.md").write_text(OPS_DOC, encoding="utf-8")
    update_directory(root / "idx", [root / "docs"], embedder=HashEmbedder(64),
                     metadata={"notes/ops.md": {"access": ["ops"]}})
    service = Service(root / "idx", embedder=HashEmbedder(64))
    tokens = {OPS_TOKEN: Access(frozenset({"ops"}))}
    with serve_asgi(create_app(service, tokens=tokens)) as base:
        yield base


def _dump(url: str, profile: Path) -> str:
    """The DOM of ``url`` once its scripts and fetches are done."""
    command = [_browser(), "--headless", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=10000",
               "--dump-dom", url]
    if os.geteuid() == 0:
        command.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


class _Page(HTMLParser):
    """What the inspector shows: texts by element id and by class, and every element's
    tag, id and classes, from a dumped DOM."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, str, set[str], dict[str, str]]] = []
        self.text: dict[str, list[str]] = {}  # "#id" / ".class" / "tag" -> texts
        self._open: list[list[str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = set(a.get("class", "").split())
        self.elements.append((tag, a.get("id", ""), classes, a))
        if tag in ("img", "input", "meta", "link", "br", "col", "hr", "source"):
            return
        keys = [tag] + ([f"#{a['id']}"] if a.get("id") else []) + [f".{c}" for c in classes]
        self._open.append(keys)
        for key in keys:
            self.text.setdefault(key, []).append("")

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for keys in self._open:
            for key in keys:
                self.text[key][-1] += data

    def texts(self, key: str) -> list[str]:
        return [t.strip() for t in self.text.get(key, [])]

    def count(self, tag: str, cls: str) -> int:
        return sum(1 for t, _, c, _ in self.elements if t == tag and cls in c)


def _query(base: str, payload: dict) -> dict:
    import httpx

    r = httpx.post(f"{base}/query", json=payload, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_shared_link_shows_the_ranked_sections_and_the_budget(server: str,
                                                                tmp_path: Path) -> None:
    _browser()
    expected = _query(server, {"question": QUESTION, "budget": 900, "k": 6})
    page = _Page(_dump(f"{server}/?{urlencode({'q': QUESTION, 'budget': 900, 'k': 6})}",
                       tmp_path))
    assert page.texts("#error") == [""]  # no error shown
    # The ranked sections: the titles /query returns, in its order, with their refs.
    titles = [c["title"] for c in expected["contexts"]]
    assert titles and page.texts("h4") == titles
    refs = page.texts(".ref")
    assert all(c["ref"] in refs for c in expected["contexts"])
    crumbs = page.texts(".crumb")
    for c in expected["contexts"]:
        assert " > ".join(c["path"]) in crumbs
    # The budget bar: one segment per section plus the unused rest, and the totals.
    assert page.count("span", "seg") == len(titles) + (expected["tokens_used"] < 900)
    totals = page.texts("#budget-totals")[0]
    assert f"{expected['tokens_used']:,} / 900 tokens" in totals
    # The document list and the filter built from /documents.
    docs = page.texts(".doc-meta")
    assert len(docs) == 5 and any(d.startswith("papers/1908.05828.md") for d in docs)
    # Each section's lines: those handed over highlighted, the rest left out by the budget.
    assert page.count("tr", "packed") > 0
    packed_lines = {int(a["data-line"]) for t, _, c, a in page.elements
                    if t == "tr" and "packed" in c}
    first = expected["contexts"][0]
    for lo, hi in first["packed_spans"]:
        assert set(range(lo, hi + 1)) <= packed_lines
    if any(c["trimmed"] for c in expected["contexts"]):
        assert page.count("tr", "left-out") + page.count("tr", "fold") > 0
    # What the budget left out, as links that open it.
    assert expected["omitted"]
    assert all(ref in page.texts("#omitted")[0] for ref in expected["omitted"])
    # The question's state is kept: the page title names it.
    assert page.texts("title") == [f"{QUESTION} · proxy-pointer inspector"]


def test_the_link_carries_the_document_filter_and_mode(server: str, tmp_path: Path) -> None:
    _browser()
    doc = "papers/1911.07555.md"
    expected = _query(server, {"question": QUESTION, "mode": "collapsed", "doc_ids": [doc]})
    url = f"{server}/?" + urlencode({"q": QUESTION, "mode": "collapsed", "doc": doc})
    page = _Page(_dump(url, tmp_path))
    assert page.texts("h4") == [c["title"] for c in expected["contexts"]]
    assert all(c["doc_id"] == doc for c in expected["contexts"])


def test_markup_in_documents_is_shown_as_text(server: str, tmp_path: Path) -> None:
    _browser()
    url = f"{server}/?" + urlencode({"q": TAGS_QUESTION, "doc": "notes/tags.md"})
    html = _dump(url, tmp_path)
    page = _Page(html)
    assert "pwned" not in " ".join(page.texts("title"))
    assert not any(t in ("img", "script") and not a.get("src", "").startswith("inspector/")
                   for t, _, _, a in page.elements)
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=" in html


def test_api_errors_are_shown_in_the_page(server: str, tmp_path: Path) -> None:
    _browser()
    page = _Page(_dump(f"{server}/?" + urlencode({"q": QUESTION, "budget": 0}), tmp_path))
    error = page.texts("#error")[0]
    assert error.startswith("Error: budget:") and "greater than or equal to 1" in error
    page = _Page(_dump(f"{server}/?" + urlencode({"q": "   "}), tmp_path))
    assert page.texts("#error") == ["Error: question: the question is empty"]


def test_a_token_shows_what_its_groups_may_read(server: str, tmp_path: Path) -> None:
    _browser()
    link = f"{server}/?" + urlencode({"q": "furnace night shift rota"})
    anonymous = _Page(_dump(link, tmp_path / "a"))
    assert "Furnace rota" not in anonymous.texts(".doc-title")
    assert "Night shifts" not in anonymous.texts("h4")
    ops = _Page(_dump(f"{link}#token={OPS_TOKEN}", tmp_path / "b"))
    assert "Furnace rota" in ops.texts(".doc-title")
    assert ops.texts("h4")[0] == "Night shifts"
    assert ops.texts("#error") == [""]


FILING = """\
FORM 10-K
For the fiscal year ended December 31, {year}
Commission File Number 001-0000
ACME CORP
(Exact name of registrant as specified in its charter)

# Results of Operations

Revenue for fiscal {year} was {revenue} million dollars from widget sales.
"""


def test_cards_and_routing_are_shown(tmp_path: Path) -> None:
    _browser()
    pytest.importorskip("fastapi")
    from proxy_pointer.embeddings import HashEmbedder
    from proxy_pointer.index import update_directory
    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.service import Service

    docs = tmp_path / "docs"
    docs.mkdir()
    for year, revenue in ((2021, 510), (2022, 620)):
        (docs / f"acme-{year}.md").write_text(FILING.format(year=year, revenue=revenue),
                                              encoding="utf-8")
    update_directory(tmp_path / "idx", [docs], embedder=HashEmbedder(64))
    service = Service(tmp_path / "idx", embedder=HashEmbedder(64))
    with serve_asgi(create_app(service)) as base:
        page = _Page(_dump(f"{base}/?{urlencode({'q': 'Acme revenue in FY2019'})}",
                           tmp_path / "profile"))
    # The document list shows each card; the result says where it was routed and why.
    assert page.texts(".doc-meta")[0].startswith("acme-2021.md · Acme Corp · 10-K · FY2021")
    routing = page.texts("#routing")[0]
    # the page shows the filings the API chose: no filing covers FY2019, so both of Acme's
    # are weighed and the best kept (the second too when close)
    chosen = service.query("Acme revenue in FY2019")["routing"]["documents"]
    assert chosen and set(chosen) <= {"acme-2021.md", "acme-2022.md"}
    assert routing.startswith(f"Routed by Acme, FY2019 to {', '.join(chosen)}.")
    assert "No document of Acme Corp covers FY2019." in routing
    # the "Only in" list marks the routed files
    assert sorted(t.strip() for t in page.texts(".routed")) == [f"{d} (routed)" for d in chosen]
    # a question that names no company says so, and marks nothing
    with serve_asgi(create_app(service)) as base:
        page = _Page(_dump(f"{base}/?{urlencode({'q': 'widget revenue growth'})}",
                           tmp_path / "profile2"))
    assert page.texts("#routing")[0].startswith("Not routed: the question names no company")
    assert page.texts(".routed") == []


def test_a_concept_question_shows_what_it_was_expanded_with(tmp_path: Path) -> None:
    _browser()
    pytest.importorskip("fastapi")
    from proxy_pointer.embeddings import HashEmbedder
    from proxy_pointer.index import update_directory
    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.service import Service

    acme = Path(__file__).resolve().parents[1] / "fixtures" / "vocab"
    update_directory(tmp_path / "idx", [acme], embedder=HashEmbedder(64))
    service = Service(tmp_path / "idx", embedder=HashEmbedder(64))
    with serve_asgi(create_app(service)) as base:
        q = urlencode({"q": "Does Acme have positive working capital?"})
        page = _Page(_dump(f"{base}/?{q}", tmp_path / "profile"))
    shown = page.texts("#expansion")[0]
    assert shown.startswith("Concept working_capital: balance sheet (found as acme_10k.md#0011)")
    assert "line items current_assets, current_liabilities" in shown
