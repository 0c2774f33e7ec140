"""The CLI's read commands go through Service (the object HTTP and MCP hold) as a trusted
caller: every retrieval option, no request limits, the same payloads and doc-id resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proxy_pointer.access import Access
from proxy_pointer.cli import main, progress
from proxy_pointer.llm import ScriptedLLM
from proxy_pointer.search.retrieval import RetrievalConfig
from proxy_pointer.serve.service import Service, UnavailableError

QUESTION = "telescope mirror"


def test_resolve_doc_names_a_document_also_without_its_suffix(saved: Path) -> None:
    service = Service(saved)
    assert service.resolve_doc("observatory") == "observatory.md"
    assert service.resolve_doc("observatory.md", access=Access()) == "observatory.md"
    assert service.resolve_doc("nope") is None


def test_retrieve_and_answer_are_the_object_forms_of_query_and_ask(saved: Path) -> None:
    llm = ScriptedLLM("The mirror is ground by hand.")
    service = Service(saved, llm=llm)
    config = RetrievalConfig(budget=300)
    assert service.retrieve(QUESTION, config).to_dict() == service.query(QUESTION, budget=300)
    assert service.answer(QUESTION, config).to_dict() == service.ask(QUESTION, budget=300)
    other = ScriptedLLM("Another answer.")
    assert service.answer(QUESTION, config, other).text == "Another answer."
    with pytest.raises(UnavailableError):
        Service(saved).answer(QUESTION, config)


def test_cli_options_beyond_the_servers_limits_still_work(capsys, saved: Path) -> None:
    """The CLI's own user may ask for more than an HTTP request may (budget > 32000,
    k > 100); Service.query would refuse these."""
    assert main(["query", "--index", str(saved), "--json", "--budget", "40000", "--k", "200",
                 "--k-search", "300", QUESTION]) == 0
    cli = json.loads(capsys.readouterr().out)
    config = RetrievalConfig(budget=40000, k=200, k_search=300)
    assert cli == Service(saved).retrieve(QUESTION, config).to_dict()
    assert cli["budget"] == 40000


def test_cli_section_is_the_service_section(capsys, saved: Path) -> None:
    ref = Service(saved).query(QUESTION)["contexts"][0]["ref"]
    assert main(["section", "--index", str(saved), "--json", ref]) == 0
    assert json.loads(capsys.readouterr().out) == Service(saved).section_by_ref(
        ref, access=Access())


def test_per_doc_batch_keeps_an_unknown_doc_id_and_finds_nothing(capsys, saved: Path,
                                                                 tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": 1, "question": QUESTION, "doc_id": "missing"}) + "\n")
    assert main(["query", "--index", str(saved), "--questions", str(questions),
                 "--per-doc"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["id"] == 1 and row["contexts"] == []


def test_every_subcommand_is_declared_once_with_its_help(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in ("convert", "tree", "index", "query", "section", "serve", "ask", "mcp"):
        assert f"    {name} " in out


def test_progress_display_is_none_when_quiet() -> None:
    assert progress.display(quiet=True) is None
