"""Tests for proxy_pointer.parse.headings, through ``build_tree``: what is and is not a heading
(CommonMark, front matter, unclosed fences), heading titles, and heading recovery for
documents converted from PDF."""

from __future__ import annotations

import pytest
from trees import fixture_tree, heads, outline

from proxy_pointer.parse.tree import TreeConfig, build_tree


# --- what is and is not a heading --------------------------------------------------------
def test_hash_lines_in_fences_of_any_length_and_marker_are_not_headings():
    text = ("# A\n```\n# no\n```\n~~~\n# no\n~~~\n"
            "`````md\n```\n# no\n```\n`````\n~~~~\n# no\n~~~\n# still code\n~~~~\n## B\n")
    assert heads(build_tree(text)) == [(1, 1, "A"), (18, 2, "B")]


def test_unclosed_fence_is_a_warning_and_swallows_the_rest():
    tree = build_tree("# A\n\n```python\n# comment\n## not a heading\n", "doc.md")
    assert heads(tree) == [(1, 1, "A")]
    assert tree.warnings == [
        "doc.md: line 3: code fence '```' is never closed; the rest of the document is "
        "treated as code"
    ]
    # An indented line that looks like a closing fence does not close it.
    assert build_tree("```\n    ```\n").warnings
    assert build_tree("# A\n```\ncode\n```").warnings == []


def test_unclosed_fence_in_a_list_item_is_reported_but_does_not_hide_later_headings():
    tree = build_tree("- item\n  ```\n  # x\n\n# After\n", "d")
    assert heads(tree) == [(5, 1, "After")]
    assert tree.warnings == [
        "d: line 2: code fence '```' is not closed before its list item or block quote ends"
    ]


def test_indented_code_html_blocks_and_front_matter_are_not_headings():
    text = ("---\ntitle: T\n# yaml comment\n---\n"
            "    # indented code\n\n\t# tab-indented code\n\n"
            "<div>\n# inside html\n</div>\n\n# Real\n")
    tree = build_tree(text)
    assert heads(tree) == [(13, 1, "Real")]
    assert tree.title == "T"


def test_a_leading_rule_followed_by_a_blank_line_is_not_front_matter():
    text = "---\n\n# Title\n\ntext\n\n---\n\n# B\n"
    assert heads(build_tree(text)) == [(3, 1, "Title"), (9, 1, "B")]
    # An unclosed front matter block is not front matter either.
    assert heads(build_tree("---\n# A\ntext\n")) == [(2, 1, "A")]


def test_setext_headings_join_their_lines_with_one_space():
    tree = build_tree("Annual\n  report\n===\n\nPart *one*\n---\ntext\n")
    assert heads(tree) == [(1, 1, "Annual report"), (5, 2, "Part *one*")]
    first, second = tree.heading_nodes
    assert (first.start, first.body_start) == (0, 3)
    assert second.title == "Part one"


def test_atx_indented_up_to_three_spaces_is_a_heading():
    assert heads(build_tree(" # One\n  ## Two\n   ### Three\n    #### code\n")) == [
        (1, 1, "One"), (2, 2, "Two"), (3, 3, "Three")]


def test_only_top_level_headings_count():
    text = "- # in a list\n\n> # in a quote\n\n1. ## numbered\n\n# Top\n"
    assert heads(build_tree(text)) == [(7, 1, "Top")]


def test_titles_keep_hashes_inside_and_drop_the_closing_sequence():
    tree = build_tree("## C#\n## Results ##\n# F# and C# #\n# foo#\n# \\# escaped\n")
    assert [n.raw_title for n in tree] == ["C#", "Results", "F# and C#", "foo#", "\\# escaped"]
    assert tree.nodes[-1].title == "# escaped"


def test_raw_title_is_the_source_and_title_is_plain_text():
    tree = build_tree("# **Free Cash Flow**\n## [Item 7](#item7) `code` &amp; <u>more</u>\n"
                      "### ![logo](x.png) Logo\n")
    assert [(n.raw_title, n.title) for n in tree] == [
        ("**Free Cash Flow**", "Free Cash Flow"),
        ("[Item 7](#item7) `code` &amp; <u>more</u>", "Item 7 code & more"),
        ("![logo](x.png) Logo", "logo Logo"),
    ]


def test_reference_links_in_headings_resolve_against_the_document():
    tree = build_tree("# See [the notes][n]\n\n[n]: https://example.com\n")
    assert tree.nodes[0].title == "See the notes"


def test_empty_atx_heading_is_a_heading_with_an_empty_title():
    tree = build_tree("# A\n#\n## \n")
    assert heads(tree) == [(1, 1, "A"), (2, 1, ""), (3, 2, "")]



# --- heading recovery ---------------------------------------------------------------------
def test_recovery_is_off_by_default():
    text = "# T\n\n**Bold line**\n\n2.1 Numbered Line\n"
    assert heads(build_tree(text)) == [(1, 1, "T")]
    assert heads(build_tree(text, config=TreeConfig(recover_headings=True))) == [
        (1, 1, "T"), (3, 2, "**Bold line**"), (5, 3, "2.1 Numbered Line")]
    # The keyword overrides the config.
    cfg = TreeConfig(recover_headings=True)
    assert heads(build_tree(text, config=cfg, recover_headings=False)) == [(1, 1, "T")]


def test_recovered_bold_lines_are_siblings_under_the_current_section():
    tree = fixture_tree("bold_lines.md", recover_headings=True)
    assert outline(tree.to_pageindex()["structure"]) == [
        (1, 0, "Results of Operations"), (3, 1, "**Net Revenue**"),
        (7, 1, "**Operating Profit**"), (11, 1, "Liquidity")]
    net = tree.get("0001")
    assert net.recovered and net.title == "Net Revenue" and net.level == 2
    assert not tree.get("0003").recovered


def test_recovered_numbered_lines_take_their_depth():
    text = ("# Paper\n\n1 Introduction\n\nText.\n\n1.1 Background\n\nMore.\n\n"
            "2 Method\n\nx\n\n**2.1. Training Setup**\n\ny\n")
    tree = build_tree(text, recover_headings=True)
    assert [(n.level, n.title) for n in tree.heading_nodes] == [
        (1, "Paper"), (2, "1 Introduction"), (3, "1.1 Background"), (2, "2 Method"),
        (3, "2.1. Training Setup")]
    chapters = build_tree("Chapter 1\n\ntext\n\n**Appendix A**\n\nCHAPTER 2: The End\n",
                          recover_headings=True)
    assert [(n.level, n.title) for n in chapters.heading_nodes] == [
        (1, "Chapter 1"), (2, "Appendix A"), (1, "CHAPTER 2: The End")]


@pytest.mark.parametrize("line", [
    "Note 4 shows that revenue grew.",  # a sentence, not a title
    "2.1 million shares were sold",  # a number, not numbering
    "2022 Annual Report",  # a year
    "1. Introduction",  # Markdown reads this as a list item
    "- **Bold item**",  # in a list
    "> **Quoted**",  # in a block quote
    "**a** and **b**",  # bold is not the whole line
    "**Securities registered pursuant to Section 12(b) of the Act:**",  # a label
    "**Two\nlines**",  # not a one-line paragraph
    "Intro text\n**Bold line**",  # part of a paragraph
    "**" + "x" * 121 + "**",  # too long for a title
    "*Italic only*",
    "3 months ended",
    "0 – Out-Of-Scope 1 – In-Scope",  # a label, not numbering
    "Section 7.2 **RSP-Related Account** 27",  # a table-of-contents entry with its page
])
def test_recovery_is_conservative(line: str):
    tree = build_tree(f"# T\n\n{line}\n", recover_headings=True)
    assert heads(tree) == [(1, 1, "T")]


def test_recovery_title_length_is_configurable():
    text = "**" + "x" * 50 + "**\n"
    assert not build_tree(text, config=TreeConfig(recover_headings=True,
                                                  max_recovered_title_chars=40)).has_headings
    assert build_tree(text, recover_headings=True).has_headings


def test_flattened_numbered_headings_are_relevelled_only_in_recovery():
    text = "# 1 Introduction\na\n# 1.1 Background\nb\n# 2 Method\n# 2.1 Data\n# 2.1.1 Split\n"
    text += "# References\n"
    assert {n.level for n in build_tree(text)} == {1}
    tree = build_tree(text, recover_headings=True)
    assert [(n.level, n.title, n.parent_id) for n in tree] == [
        (1, "1 Introduction", None), (2, "1.1 Background", "0000"), (1, "2 Method", None),
        (2, "2.1 Data", "0002"), (3, "2.1.1 Split", "0003"), (1, "References", None)]
    assert not any(n.recovered for n in tree)


def test_consistent_numbered_headings_are_left_alone():
    text = "# 1 Intro\n## 1.1 Background\n# 2 Method\n### 2.1 Odd but deliberate\n"
    assert heads(build_tree(text, recover_headings=True)) == heads(build_tree(text))


def test_recovery_on_a_real_converted_10k_excerpt():
    """LlamaParse output (PepsiCo 10-K): sections marked only by bold lines."""
    plain = fixture_tree("pepsico_10k_excerpt.md")
    tree = fixture_tree("pepsico_10k_excerpt.md", recover_headings=True)
    assert len(plain.heading_nodes) == 16 and len(tree.heading_nodes) == 29
    by_title = {n.title: n for n in tree.heading_nodes}
    part1 = by_title["PART I"]
    item1 = by_title["Item 1. Business."]
    assert item1.recovered and item1.parent_id == part1.node_id
    # The business segments become sections of Item 1, not level-1 headings as in PageIndex.
    for title in ("Company Overview", "Frito-Lay North America", "Latin America"):
        assert by_title[title].parent_id == item1.node_id
    # Real headings keep their place; "Item 1A" is levelled like "Item 1".
    assert by_title["Direct-Store-Delivery"].parent_id == item1.node_id
    assert by_title["Item 1A. Risk Factors."].level == item1.level
    # The table of contents is a multi-line paragraph of bold lines: nothing is promoted.
    toc = by_title["Table of Contents"]
    assert not any(n.parent_id == toc.node_id for n in tree.heading_nodes)
    assert "PART II" not in by_title
    # Long bold risk-factor sentences stay text.
    assert not any(n.title.startswith("Product recalls") for n in tree.heading_nodes)
    assert tree.lines == plain.lines
