"""The text keys share one plural rule, so a title, a phrase and a question agree on a word."""

from __future__ import annotations

from proxy_pointer.vocab.keys import singular, title_key, title_words, words


def test_one_plural_rule_everywhere() -> None:
    assert [singular(w) for w in ("statements", "loss", "business", "gas", "sales")] == [
        "statement", "loss", "business", "gas", "sale"]
    assert words("Net Losses of the Businesses") == ("net", "losse", "of", "the", "businesse")
    assert title_words("Statement of Comprehensive Loss") == {"statement", "comprehensive", "loss"}
    assert title_key("STATEMENTS OF CASH FLOWS") == title_key("Statement of Cash Flow")
    assert "loss" in words("Operating loss") and title_key("Loss") == "loss"
