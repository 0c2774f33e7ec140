"""Noise sections: title rules in several languages, scopes, user rules, the LLM option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proxy_pointer.errors import ConfigError
from proxy_pointer.llm import ScriptedLLM
from proxy_pointer.parse.noise import (
    CATEGORIES,
    DEFAULT_CATEGORIES,
    NoiseConfig,
    bare_title,
    classify_noise,
    classify_with_llm,
    match_title,
    noise_labels,
)
from proxy_pointer.parse.tree import build_tree

FIXTURES = Path(__file__).parents[1] / "fixtures" / "chunking"
SHARED_10K = Path(__file__).resolve().parents[3] / "shared" / "data" / "finance-10k" / "docs"


def _tree(name: str):
    return build_tree((FIXTURES / name).read_text(encoding="utf-8"), doc_id=name)


def _by_title(tree, decisions) -> dict[str, str | None]:
    """Title -> "category/scope" (None when kept), for every heading node."""
    out = {}
    for n in tree.heading_nodes:
        d = decisions.get(n.node_id)
        out[n.title] = f"{d.category}/{d.scope}" if d else None
    return out


# --- matching -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("title", "category"),
    [
        ("Table of Contents", "contents"),
        ("**TABLE OF CONTENTS**", "contents"),
        ("Contents (continued)", "contents"),
        ("Contents — continued", "contents"),
        ("7. References", "references"),
        ("VII. Bibliography", "references"),
        ("A. Acknowledgments", "acknowledgments"),
        ("References (cont.)", "references"),
        ("References:", "references"),
        ("Chapter 9: References", "references"),
        ("Appendix B: Glossary", "glossary"),
        ("1.2.3 Abbreviations and Acronyms", "abbreviations"),
        ("Index", "index"),
        ("i. Index", "index"),
        ("Index to Consolidated Financial Statements", "contents"),
        ("List of Figures", "contents"),
        ("Foreword", "foreword"),
        ("Preface", "foreword"),
        ("Índice", "contents"),
        ("Agradecimientos", "acknowledgments"),
        ("Referencias", "references"),
        ("Siglas y abreviaturas", "abbreviations"),
        ("Sommaire", "contents"),
        ("Table des matières", "contents"),
        ("Remerciements", "acknowledgments"),
        ("Avant-propos", "foreword"),
        ("Inhaltsverzeichnis", "contents"),
        ("Literaturverzeichnis", "references"),
        ("Abkürzungsverzeichnis", "abbreviations"),
        ("Danksagung", "acknowledgments"),
        ("Sumário", "contents"),
        ("Agradecimentos", "acknowledgments"),
        ("Referências bibliográficas", "references"),
        ("目录", "contents"),
        ("参考文献", "references"),
        ("第七章 参考文献", "references"),
        ("参考文献（续）", "references"),
        ("致谢", "acknowledgments"),
        ("七、致谢", "acknowledgments"),
        ("缩略语", "abbreviations"),
    ],
)
def test_noise_titles_match(title, category):
    m = match_title(title)
    assert m is not None, title
    assert m[0] == category


@pytest.mark.parametrize(
    "title",
    [
        "References to prior work",
        "Index funds",
        "Index funds for water utilities",
        "Executive Summary",  # off by default: real content
        "Risk Factors Summary",
        "Definitions",  # legal definitions are content
        "Introduction",
        "Software suite",
        "2022",
        "Contents of the box",
        "前言",  # the introduction in Chinese papers
        "",
    ],
)
def test_content_titles_do_not_match(title):
    assert match_title(title) is None


def test_bare_title():
    assert bare_title("**7. References (continued)**") == "references"
    assert bare_title("VII. Índice") == "indice"
    assert bare_title("Item 1A. Risk Factors") == "risk factors"
    assert bare_title("2022") == "2022"
    assert bare_title("Table des matières :") == "table des matieres"


def test_executive_summary_can_be_enabled():
    cfg = NoiseConfig().with_categories("executive_summary")
    assert match_title("Executive Summary", cfg)[0] == "executive_summary"
    assert match_title("Resumen ejecutivo", cfg)[0] == "executive_summary"
    assert match_title("References", cfg.with_categories(remove=["references"])) is None


def test_user_titles_patterns_and_keep():
    cfg = NoiseConfig(extra_titles=("Disclaimer",), extra_patterns=(r"legal notice.*",),
                      keep_titles=("Glossary",))
    assert match_title("DISCLAIMER", cfg)[:2] == ("custom", "own")
    assert match_title("3. Legal notice and terms", cfg)[0] == "custom"
    assert match_title("Glossary", cfg) is None
    assert match_title("Disclaimers apply", cfg) is None


def test_config_validation_and_round_trip():
    with pytest.raises(ConfigError, match="unknown noise categories"):
        NoiseConfig(categories=frozenset({"contents", "bogus"}))
    with pytest.raises(ConfigError, match="does not compile"):
        NoiseConfig(extra_patterns=("(",))
    with pytest.raises(ConfigError, match="sequence of strings"):
        NoiseConfig(extra_titles="Disclaimer")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        NoiseConfig(max_subtree_fraction=0)
    cfg = NoiseConfig(extra_titles=("Disclaimer",), use_llm=True).with_categories(
        "executive_summary")
    assert NoiseConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert NoiseConfig.off().categories == frozenset()
    assert set(DEFAULT_CATEGORIES) == set(CATEGORIES) - {"executive_summary"}


# --- documents, title by title -----------------------------------------------------------
def test_english_fixture_title_by_title():
    tree = _tree("noise_en.md")
    d = classify_noise(tree)
    assert _by_title(tree, d) == {
        "Annual Report on Water Access": None,
        "Table of Contents": "contents/own",
        "Foreword": "foreword/own",
        "Scope of this report": None,  # a foreword's children are judged on their own
        "Executive Summary": None,
        "List of Abbreviations": "abbreviations/own",
        "3. Findings": None,
        "References to prior work": None,
        "Index funds for water utilities": None,
        "Glossary": "glossary/own",
        "Acknowledgements": "acknowledgments/subtree",
        "7. References (continued)": "references/subtree",
        "Primary sources": "references/subtree",  # inside the References subtree
        "Index": "index/subtree",
    }
    refs = next(n for n in tree.nodes if n.title.startswith("7. References"))
    inner = next(n for n in tree.nodes if n.title == "Primary sources")
    assert d[inner.node_id].inherited_from == refs.node_id
    assert "inside" in d[inner.node_id].reason
    assert "matches references" in d[refs.node_id].reason


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("noise_es.md", {
            "Informe sobre el acceso al agua": None, "Índice": "contents/own",
            "Siglas y abreviaturas": "abbreviations/own", "1. Introducción": None,
            "Resumen ejecutivo": None, "Agradecimientos": "acknowledgments/subtree",
            "Referencias": "references/subtree",
        }),
        ("noise_fr.md", {
            "Rapport sur l'accès à l'eau": None, "Sommaire": "contents/own",
            "Avant-propos": "foreword/own", "Liste des abréviations": "abbreviations/own",
            "Résultats": None, "Remerciements": "acknowledgments/subtree",
            "Bibliographie": "references/subtree",
        }),
        ("noise_de.md", {
            "Bericht zur Wasserversorgung": None, "Inhaltsverzeichnis": "contents/own",
            "Vorwort": "foreword/own", "Abkürzungsverzeichnis": "abbreviations/own",
            "Ergebnisse": None, "Danksagung": "acknowledgments/subtree",
            "Literaturverzeichnis": "references/subtree",
        }),
        ("noise_pt.md", {
            "Relatório sobre o acesso à água": None, "Sumário": "contents/own",
            "Lista de siglas": "abbreviations/own", "Introdução": None, "Resultados": None,
            "Agradecimentos": "acknowledgments/subtree",
            "Referências bibliográficas": "references/subtree",
        }),
        ("noise_zh.md", {
            "农村饮水状况报告": None, "目录": "contents/own", "缩略语": "abbreviations/own",
            "一、概述": None, "二、主要发现": None, "致谢": "acknowledgments/subtree",
            "参考文献": "references/subtree",
        }),
    ],
)
def test_multilingual_fixtures_title_by_title(name, expected):
    tree = _tree(name)
    assert _by_title(tree, classify_noise(tree)) == expected


def test_qasper_paper_drops_only_acknowledgments():
    tree = _tree("qasper_1908.07245.md")
    d = classify_noise(tree)
    assert [tree.get(k).title for k in d] == ["Acknowledgments"]


def test_amd_excerpt_drops_its_index():
    tree = _tree("amd_2022_10k_excerpt.md")
    d = classify_noise(tree)
    assert {tree.get(k).title: v.category for k, v in d.items()} == {"INDEX": "index"}
    # "INDEX" is a level-1 heading followed by "PART I" at level 1: the subtree is its own text
    node = next(n for n in tree.nodes if n.title == "INDEX")
    assert node.children == ()


def test_implausibly_large_subtree_is_downgraded():
    body = "Real content that goes on for a while and is not a bibliography at all.\n\n"
    text = "# References\n\nSmith (2020).\n\n" + "".join(
        f"## Chapter {i}\n\n{body}" for i in range(5))
    tree = build_tree(text, doc_id="misleveled")
    d = classify_noise(tree)
    assert list(d) == ["0000"]
    assert d["0000"].scope == "own"
    assert "plausible" in d["0000"].reason


def test_labels_for_the_cli():
    tree = _tree("noise_en.md")
    labels = noise_labels(classify_noise(tree))
    refs = next(n for n in tree.nodes if n.title.startswith("7. References"))
    inner = next(n for n in tree.nodes if n.title == "Primary sources")
    assert labels[refs.node_id] == "noise: references (subtree)"
    assert labels[inner.node_id] == f"noise: references (in {refs.node_id})"
    assert classify_noise(tree, NoiseConfig.off()) == {}


def test_preamble_and_headerless_documents_have_no_noise():
    tree = _tree("headerless.md")
    assert classify_noise(tree) == {}


# --- the optional LLM pass -----------------------------------------------------------------
def test_llm_labels_are_added_in_one_call():
    tree = _tree("noise_en.md")
    scope = next(n for n in tree.nodes if n.title == "Scope of this report")
    reply = {"noise": [{"id": scope.node_id, "category": "foreword"},
                       {"id": "9999", "category": "contents"},
                       {"id": "0000", "category": "made_up"}]}
    llm = ScriptedLLM(f"Sure! ```json\n{json.dumps(reply)}\n```")
    d = classify_noise(tree, NoiseConfig(use_llm=True), llm=llm)
    assert len(llm.calls) == 1
    prompt, system = llm.calls[0]
    assert "Scope of this report" in prompt and scope.node_id in prompt and system
    assert "12,400 households" not in prompt  # titles only, never section text
    assert d[scope.node_id].category == "foreword"
    assert "LLM" in d[scope.node_id].reason
    assert "0000" not in d  # unknown category ignored
    rules = classify_noise(tree)
    assert set(d) == set(rules) | {scope.node_id}


@pytest.mark.parametrize(
    "reply",
    ["I cannot help with that.", "{not json", '{"noise": "everything"}', "[1, 2, 3]", "",
     RuntimeError("backend down")],
)
def test_llm_garbage_falls_back_to_rules(reply):
    tree = _tree("noise_en.md")
    llm = ScriptedLLM(reply)
    assert classify_noise(tree, NoiseConfig(use_llm=True), llm=llm) == classify_noise(tree)


def test_llm_reply_shapes():
    tree = _tree("noise_es.md")
    idx = next(n.node_id for n in tree.nodes if n.title == "1. Introducción")
    assert classify_with_llm(tree, ScriptedLLM(json.dumps({idx: "foreword"}))) == {idx: "foreword"}
    assert classify_with_llm(
        tree, ScriptedLLM(json.dumps([{"node_id": int(idx), "label": "Foreword"}]))
    ) == {idx: "foreword"}
    # disabled categories are dropped; without use_llm the LLM is never called
    cfg = NoiseConfig().with_categories(remove=["foreword"])
    assert classify_with_llm(tree, ScriptedLLM(json.dumps({idx: "foreword"})), cfg) == {}
    llm = ScriptedLLM("{}")
    classify_noise(tree, NoiseConfig(), llm=llm)
    assert llm.calls == []


# --- the four 10-K filings (only where the shared data is present) ------------------------
EXPECTED_10K = {
    "AMD_2022_10K.md": {"INDEX": "index"},
    "AMERICANEXPRESS_2022_10K.md": {
        "TABLE OF CONTENTS": "contents", "GLOSSARY OF SELECTED TERMINOLOGY": "glossary",
        "INDEX TO CONSOLIDATED FINANCIAL STATEMENTS": "contents",
    },
    "BOEING_2022_10K.md": {
        "Index to the Form 10-K": "contents", "TABLE OF CONTENTS": "contents",
        "Index to the Consolidated Financial Statements": "contents",
    },
    "PEPSICO_2022_10K.md": {
        "Table of Contents": "contents", "TABLE OF CONTENTS": "contents",
        "GLOSSARY": "glossary", "INDEX TO EXHIBITS": "contents", "Foreword": "foreword",
    },
}
KEPT_10K = {
    "DOCUMENTS INCORPORATED BY REFERENCE", "Risk Factors Summary", "ITEM 16. FORM 10-K SUMMARY",
    "Item 16. Form 10-K Summary.", "Summary of Business Segment Data", "Definitions",
    "DEFINITIONS", "2.01 Definitions.", "Cash Flow Summary",
    "Advanced Micro Devices, S&P 500 Index and S&P 500 Semiconductor Index",
    "TABLE 1: SUMMARY OF FINANCIAL PERFORMANCE",
    "Definition and Limitations of Internal Control Over Financial Reporting",
}


@pytest.mark.slow  # the shared dev data: CI runs it
@pytest.mark.skipif(not SHARED_10K.is_dir(), reason="shared 10-K data not present")
@pytest.mark.parametrize("name", sorted(EXPECTED_10K))
def test_ten_k_noise_title_by_title(name):
    tree = build_tree((SHARED_10K / name).read_text(encoding="utf-8"), doc_id=name)
    d = classify_noise(tree)
    dropped = {tree.get(k).title: v.category for k, v in d.items()}
    assert dropped == EXPECTED_10K[name]
    assert all(v.scope == "own" or v.category == "index" for v in d.values())
    titles = {n.title for n in tree.heading_nodes}
    for t in KEPT_10K & titles:
        assert t not in dropped, t
