"""A shelf of filings end to end: cards stored with each document, questions routed to the
company and period they name, card filters on every interface (Python, CLI, HTTP, MCP,
both framework retrievers), cards edited through metadata."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import Index

COVER = """\
UNITED STATES SECURITIES AND EXCHANGE COMMISSION
FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the fiscal year ended December 31, {year}
Commission File Number 001-0000
{name}
(Exact name of registrant as specified in its charter)
Common Stock {symbol} New York Stock Exchange

# Item 7. Management's Discussion and Analysis

## Results of Operations

Revenue for fiscal {year} was {revenue} million dollars, driven by widget sales and
capital expenditure on new plants. Operating margin improved on lower costs.

## Liquidity

Cash from operations funded capital expenditure and dividends in {year}.
"""


def _write(folder: Path) -> Path:
    folder.mkdir()
    for name, symbol, year, revenue in (("ACME CORP", "ACM", 2021, 510),
                                        ("ACME CORP", "ACM", 2022, 620),
                                        ("GLOBEX INC.", "GLBX", 2022, 900)):
        stem = f"{name.split()[0].lower()}-{year}.md"
        (folder / stem).write_text(COVER.format(name=name, symbol=symbol, year=year,
                                                revenue=revenue), encoding="utf-8")
    (folder / "notes.md").write_text("# Widget notes\n\n## Revenue\n\nRevenue is what widgets "
                                     "earn. Capital expenditure buys plants.\n", encoding="utf-8")
    return folder


@pytest.fixture
def shelf(tmp_path: Path) -> Path:
    target = tmp_path / "idx"
    Index.build([_write(tmp_path / "docs")], embedder=HashEmbedder(64)).save(target)
    return target


def test_cards_are_stored_and_questions_go_to_their_filing(shelf: Path) -> None:
    idx = Index.load(shelf)
    cards = idx.reader.cards()
    assert (cards["acme-2021.md"].entity, cards["acme-2021.md"].period) == ("Acme Corp", "FY2021")
    assert cards["notes.md"].entity == "" and cards["notes.md"].title == "Widget notes"
    r = idx.retrieve("What was Acme's FY2021 revenue?", k=4)
    # the filing asked for, and no other filing (notes.md claims no entity: it competes)
    assert {s.doc_id for s in r.sections} - {"notes.md"} == {"acme-2021.md"}
    assert r.to_dict()["routing"]["documents"] == ["acme-2021.md"]
    assert r.routing.names == ("Acme",) and r.routing.period == "FY2021"
    # the same question without routing reaches the other filings too
    unrouted = idx.retrieve("What was Acme's FY2021 revenue?", k=4, route=False)
    assert {s.doc_id for s in unrouted.sections} - {"notes.md"} != {"acme-2021.md"}
    assert not unrouted.routing


def test_a_year_no_document_covers_is_said(shelf: Path) -> None:
    r = Index.load(shelf).retrieve("What was Acme's FY2019 revenue?", k=4)
    assert "No document of Acme Corp covers FY2019" in r.routing.note
    assert r.sections and {s.doc_id for s in r.sections} <= {"acme-2021.md", "acme-2022.md",
                                                             "notes.md"}


def test_an_answer_is_told_and_warns_that_the_period_is_missing(shelf: Path) -> None:
    from proxy_pointer.llm import ScriptedLLM

    llm = ScriptedLLM("The filings do not cover FY2019.")
    answer = Index.load(shelf).ask("What was Acme's FY2019 revenue?", llm=llm)
    assert "Note from the search: No document of Acme Corp covers FY2019." in llm.calls[0][0]
    assert answer.warnings[0] == "No document of Acme Corp covers FY2019."
    covered = ScriptedLLM("Revenue was 510 [acme-2021.md#0002].")
    answer = Index.load(shelf).ask("What was Acme's FY2021 revenue?", llm=covered)
    assert "Note from the search" not in covered.calls[0][0] and not answer.warnings


def test_card_filters_act_inside_the_search(shelf: Path) -> None:
    idx = Index.load(shelf)
    by_entity = idx.retrieve("revenue capital expenditure", k=10, where={"entity": "globex"})
    assert {s.doc_id for s in by_entity.sections} == {"globex-2022.md"}
    by_period = idx.retrieve("revenue capital expenditure", k=10, where=["period=FY2022"])
    assert {s.doc_id for s in by_period.sections} == {"acme-2022.md", "globex-2022.md"}
    assert not idx.retrieve("revenue", where={"kind": "10-Q"}).sections
    # a routed question cannot escape a filter: Acme is named, but only Globex may be read
    # (a shelf of one company, so the period alone routes, and says what is missing)
    r = idx.retrieve("Acme FY2021 revenue", where={"entity": "Globex"})
    assert {s.doc_id for s in r.sections} == {"globex-2022.md"}
    assert r.routing.names == () and "Globex Inc. covers FY2021" in r.routing.note


def test_metadata_edits_the_card(shelf: Path) -> None:
    idx = Index.load(shelf)
    idx.set_metadata({"acme-2022.md": {"period": "FY2023", "access": ["board"]}})
    card = idx.reader.cards()["acme-2022.md"]
    assert (card.period, card.fiscal_year, card.period_end) == ("FY2023", 2023, "")
    assert idx.retrieve("Acme FY2023 revenue").routing.documents == ("acme-2022.md",)
    # a reader outside "board" is never routed to it, nor told it exists
    r = idx.retrieve("Acme FY2023 revenue", principal=["staff"])
    assert "acme-2022.md" not in r.routing.documents
    assert all(s.doc_id != "acme-2022.md" for s in r.sections)


def test_cli_documents_and_query(shelf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["documents", "--index", str(shelf), "--where", "entity=ACM"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split("\t")[:4] for ln in lines] == [
        ["acme-2021.md", "10-K", "Acme Corp", "FY2021"],
        ["acme-2022.md", "10-K", "Acme Corp", "FY2022"]]
    assert main(["documents", "--index", str(shelf), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["documents"]  # one document, as HTTP's
    assert {r["doc_id"]: r["card"]["kind"] for r in rows}["globex-2022.md"] == "10-K"
    assert {r["format"] for r in rows} == {"markdown"}
    assert main(["query", "--index", str(shelf), "Globex revenue in FY2022"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- routed by Globex, FY2022 to globex-2022.md")
    assert main(["query", "--index", str(shelf), "--where", "period=bogus", "revenue"]) == 0
    assert "No sections found." in capsys.readouterr().out


def test_http_mcp_and_retrievers_take_card_filters(shelf: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from proxy_pointer.access import Access
    from proxy_pointer.langchain import ProxyPointerRetriever
    from proxy_pointer.llama_index import ProxyPointerRetriever as LlamaRetriever
    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.mcp import build_server
    from proxy_pointer.serve.service import Service

    service = Service(shelf, embedder=HashEmbedder(64))
    http = TestClient(create_app(service, token="t"))
    listed = http.get("/documents", params={"where": ["entity=Acme", "period=FY2022"]}).json()
    assert [d["doc_id"] for d in listed["documents"]] == ["acme-2022.md"]
    assert listed["documents"][0]["card"]["names"] == ["Acme Corp", "Acme", "ACM"]
    assert http.get("/documents", params={"where": "nonsense"}).status_code == 400
    body = http.post("/query", json={"question": "revenue", "where": {"kind": "10-K",
                                                                      "entity": "GLBX"}}).json()
    assert {c["doc_id"] for c in body["contexts"]} == {"globex-2022.md"}
    routed = http.post("/query", json={"question": "Acme FY2022 revenue"}).json()
    assert routed["routing"]["documents"] == ["acme-2022.md"]

    server = build_server(service, access=Access())
    result = asyncio.run(server.call_tool("search", {"question": "revenue",
                                                     "where": {"entity": "Globex"}}))
    payload = json.loads(result[0][0].text) if isinstance(result, tuple) else json.loads(
        result.content[0].text)
    assert {c["doc_id"] for c in payload["contexts"]} == {"globex-2022.md"}

    lc = ProxyPointerRetriever(index_dir=str(shelf), where={"entity": "Globex"})
    assert {d.metadata["doc_id"] for d in lc.invoke("revenue")} == {"globex-2022.md"}
    li = LlamaRetriever(index_dir=str(shelf), where={"period": "FY2021"})
    assert {n.node.metadata["doc_id"] for n in li.retrieve("revenue")} == {"acme-2021.md"}


def test_an_index_saved_before_cards_reads_empty_cards(shelf: Path) -> None:
    import sqlite3

    for meta in shelf.rglob("meta.sqlite"):  # as segments were written before cards
        con = sqlite3.connect(meta)
        con.execute("ALTER TABLE documents DROP COLUMN card")
        con.commit()
        con.close()
    idx = Index.load(shelf)
    assert set(idx.reader.cards().values()) == {idx.reader.cards()["notes.md"]}
    assert idx.reader.cards()["acme-2021.md"].entity == ""
    r = idx.retrieve("What was Acme's FY2021 revenue?")
    assert r.sections and not r.routing  # answered as before cards: over every document
    assert idx.reader.documents["acme-2021.md"].card == {}


def test_routing_chooses_among_filings_and_never_hides_other_documents(shelf: Path) -> None:
    idx = Index.load(shelf)
    r = idx.retrieve("Acme FY2021 revenue capital expenditure widgets plants", k=10)
    assert r.routing.documents == ("acme-2021.md",)
    # notes.md claims no entity: it still competes, the other filings do not
    assert {s.doc_id for s in r.sections} == {"acme-2021.md", "notes.md"}


def test_aliases_route_a_nickname_and_never_reveal_a_hidden_company(
        shelf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A user's aliases file names companies no filing prints ("Roadrunner" for Acme), on
    the Python API and the CLI; an alias of a company the reader may not see routes nothing
    and changes nothing it gets."""
    aliases = tmp_path / "aliases.txt"
    aliases.write_text("# nicknames\nRoadrunner, Acme\nBigG => Globex\n")
    idx = Index.load(shelf, embedder=HashEmbedder(64))
    r = idx.retrieve("What was Roadrunner's FY2022 revenue?", aliases=str(aliases))
    assert r.routing.documents == ("acme-2022.md",) and r.routing.names == ("Roadrunner",)
    assert not idx.retrieve("What was Roadrunner's FY2022 revenue?").routing.names
    code = main(["query", "--index", str(shelf), "--aliases", str(aliases), "--json",
                 "What was BigG's FY2022 revenue?"])
    assert code == 0 and json.loads(capsys.readouterr().out)["routing"]["documents"] == [
        "globex-2022.md"]
    idx.set_metadata({"globex-2022.md": {"access": ["board"]}})
    q = "What was BigG's FY2022 revenue?"
    with_alias = idx.retrieve(q, principal=["staff"], aliases=str(aliases)).to_dict()
    assert with_alias == idx.retrieve(q, principal=["staff"]).to_dict()
    assert with_alias["routing"]["names"] == []
    assert "globex-2022.md" not in json.dumps(with_alias)
    assert idx.retrieve(q, aliases=str(aliases)).routing.documents == ("globex-2022.md",)


def test_a_question_naming_no_company_never_reveals_a_hidden_filing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Routed by its period alone, a reader's question is weighed on the cards of its view:
    with Globex's filing hidden from "staff", the API, the service behind HTTP and MCP, and
    the CLI give exactly what an index without that filing gives."""
    from proxy_pointer.access import Access
    from proxy_pointer.serve.service import Service

    q = "Which company grew widget revenue in FY2022?"
    docs = _write(tmp_path / "docs")
    Index.build([docs], embedder=HashEmbedder(64)).save(tmp_path / "all")
    idx = Index.load(tmp_path / "all", embedder=HashEmbedder(64))
    idx.set_metadata({"globex-2022.md": {"access": ["board"]}})
    idx.save(tmp_path / "all")
    (docs / "globex-2022.md").unlink()
    Index.build([docs], embedder=HashEmbedder(64)).save(tmp_path / "without")
    owner = Index.load(tmp_path / "all", embedder=HashEmbedder(64)).retrieve(q).routing
    # the owner's view weighs both filings of the period (what they hold decides)
    assert {"acme-2022.md", "globex-2022.md"} <= {d for d, _, _ in owner.scores}
    assert owner.note.startswith("No company named: what the filings hold points to")
    payloads = []
    for name, principal in (("all", ["staff"]), ("without", None)):
        api = Index.load(tmp_path / name, embedder=HashEmbedder(64)).retrieve(
            q, principal=principal).to_dict()
        served = Service(tmp_path / name, embedder=HashEmbedder(64)).query(
            q, access=Access.of(principal) if principal else Access())
        assert main(["query", "--index", str(tmp_path / name), "--json", q,
                     *(["--principal", "staff"] if principal else [])]) == 0
        cli = json.loads(capsys.readouterr().out)
        payloads.append((api, served, cli))
    assert payloads[0] == payloads[1]
    # one company is left in the reader's view, beside a document that is no filing: the
    # period alone routes nothing there, exactly as on the index without Globex
    assert payloads[0][0]["routing"]["documents"] == []
    assert "globex" not in json.dumps(payloads[0]).lower()
