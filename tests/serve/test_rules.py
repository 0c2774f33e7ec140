"""One definition of what a request may ask (``proxy_pointer.search.config``), read by every
interface: the HTTP OpenAPI schema, the MCP tool schema and the CLI's choices state the
same modes, packings, expands and bounds, and the Python API, the service and HTTP refuse
a bad value in one wording.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from proxy_pointer import RetrievalConfig
from proxy_pointer.cli import main
from proxy_pointer.errors import ConfigError
from proxy_pointer.search import ranking, retrieval
from proxy_pointer.search.config import (
    EXPANDS,
    MODES,
    PACKINGS,
    Limits,
    Tuning,
    check_budget,
    check_question,
)
from proxy_pointer.serve import service as service_module
from proxy_pointer.serve.service import Service

#: Bounds unlike the defaults, so a schema that ignored them would show.
LIMITS = Limits(max_question_chars=321, max_budget=654, max_k=7, max_doc_ids=9,
                max_where_pairs=5, max_where_chars=43)


def _integer(prop: dict[str, Any]) -> tuple[int, int]:
    """(minimum, maximum) of an optional integer property (``anyOf`` integer, null)."""
    (number,) = [p for p in prop.get("anyOf", [prop]) if p.get("type") == "integer"]
    return number["minimum"], number["maximum"]


def _typed(prop: dict[str, Any], kind: str) -> dict[str, Any]:
    (found,) = [p for p in prop.get("anyOf", [prop]) if p.get("type") == kind]
    return found


def test_the_definitions_have_one_home() -> None:
    assert ranking.MODES is MODES and retrieval.RetrievalConfig is RetrievalConfig
    assert service_module.Limits is Limits
    assert MODES[0] == Tuning().mode and PACKINGS[0] == Tuning().packing
    assert EXPANDS[0] == Tuning().expand


@pytest.mark.usefixtures("no_token_env")
def test_the_openapi_schema_states_the_rules(saved: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("fastapi_offline")
    from proxy_pointer.serve.http import create_app

    schema = create_app(Service(saved, limits=LIMITS)).openapi()
    props = schema["components"]["schemas"]["QueryRequest"]["properties"]
    assert _typed(props["mode"], "string")["enum"] == list(MODES)
    assert _integer(props["budget"]) == (1, LIMITS.max_budget)
    assert _integer(props["k"]) == (1, LIMITS.max_k)
    assert (props["question"]["minLength"], props["question"]["maxLength"]) == (
        1, LIMITS.max_question_chars)
    assert _typed(props["doc_ids"], "array")["maxItems"] == LIMITS.max_doc_ids
    _where_bounded(_typed(props["where"], "object"))
    # what /sections says of pages is what it does: a PDF's pages open (tests/test_pages.py)
    sections = schema["paths"]["/sections"]["get"]["description"]
    assert "no indexed format has a page map" not in sections and "PDF" in sections


def _where_bounded(where: dict[str, Any]) -> None:
    """A ``where`` object's bounds: pairs, key and text value lengths (``Limits``)."""
    assert where["maxProperties"] == LIMITS.max_where_pairs
    assert where["propertyNames"]["maxLength"] == LIMITS.max_where_chars
    (text,) = [p for p in where["additionalProperties"]["anyOf"] if p.get("type") == "string"]
    assert text["maxLength"] == LIMITS.max_where_chars


def test_the_mcp_schema_states_the_rules(saved: Path) -> None:
    pytest.importorskip("mcp")
    from proxy_pointer.serve.mcp import build_server

    async def tools() -> list[Any]:
        return list(await build_server(Service(saved, limits=LIMITS)).list_tools())

    (search,) = [t for t in asyncio.run(tools()) if t.name == "search"]
    # mcp 2.x spells it input_schema, 1.x inputSchema
    props = (getattr(search, "input_schema", None) or search.inputSchema)["properties"]
    assert _integer(props["budget"]) == (1, LIMITS.max_budget)
    assert _integer(props["k"]) == (1, LIMITS.max_k)
    assert props["question"]["maxLength"] == LIMITS.max_question_chars
    assert _typed(props["doc_ids"], "array")["maxItems"] == LIMITS.max_doc_ids
    _where_bounded(_typed(props["where"], "object"))


@pytest.mark.parametrize("command", ["query", "ask"])
def test_the_cli_offers_the_choices(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    for option, choices in (("--mode", MODES), ("--packing", PACKINGS),
                            ("--expand", EXPANDS)):
        found = re.search(rf"{option} \{{([^}}]*)\}}", usage)
        assert found is not None and tuple(found.group(1).split(",")) == choices, option


@pytest.mark.parametrize(("options", "message"), [
    ({"budget": 0}, "budget must be a positive integer, got 0"),
    ({"budget": True}, "budget must be a positive integer, got True"),
    ({"k": "3"}, "k must be a positive integer, got '3'"),
    ({"mode": "sideways"}, "mode must be one of chunks, collapsed, traverse, got 'sideways'"),
    ({"packing": "tight"}, "packing must be one of evidence, sections, got 'tight'"),
    ({"expand": "all"}, "expand must be one of section, own, got 'all'"),
])
def test_the_python_api_refuses_in_one_wording(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        RetrievalConfig(**options)


@pytest.mark.parametrize(("options", "message"), [
    ({"budget": 655}, "budget must be an integer in 1..654, got 655"),
    ({"budget": 0}, "budget must be an integer in 1..654, got 0"),
    ({"k": 8}, "k must be an integer in 1..7, got 8"),
    ({"k": True}, "k must be an integer in 1..7, got True"),
    ({"doc_ids": ["a.md"] * 10}, "doc_ids must be at most 9 ids, got 10"),
    ({"mode": "sideways"}, "mode must be one of chunks, collapsed, traverse, got 'sideways'"),
])
def test_the_service_applies_its_limits_in_the_same_wording(
        saved: Path, options: dict[str, Any], message: str) -> None:
    service = Service(saved, limits=LIMITS)
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        service.query("harbor", **options)


def test_a_question_is_checked_once_for_every_interface(saved: Path) -> None:
    service = Service(saved, limits=LIMITS)
    for blank in ("", "  \n", None):
        with pytest.raises(ConfigError, match=r"^the question is empty$"):
            check_question(blank)
        with pytest.raises(ConfigError, match=r"^the question is empty$"):
            service.query(blank)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^the question is over 321 characters$"):
        service.query("x" * 322)
    assert check_question(" x " * 200) == ("x  " * 199 + "x")  # no limit without Limits
    assert check_budget(10**9) == 10**9 and check_budget(654, LIMITS) == 654
