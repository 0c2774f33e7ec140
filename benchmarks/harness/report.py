"""Write a results dict as JSON, a Markdown report and a PNG plot of any-hit vs budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import common

__all__ = ["markdown_report", "plot_any_hit", "write_report"]


def write_report(results: dict, out_dir: str | Path, stem: str | None = None) -> dict[str, Path]:
    """Write ``<stem>.json``, ``<stem>.md`` and (with matplotlib) ``<stem>.png``.

    ``stem`` defaults to the dataset's name. Returns the paths written by kind.
    """
    stem = stem or results['dataset']['name']
    return common.write_report(out_dir, stem, results,
                               markdown_report(results, plot_name=f"{stem}.png"),
                               plot=lambda png: plot_any_hit(results, png))


def _pct(v: Any) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _num(v: Any, fmt: str = "{:.1f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _scope_rows(results: dict, scope: str):
    for name, m in results["methods"].items():
        if m.get("status") != "ok":
            continue
        s = m["scopes"].get(scope)
        if s is not None and s.get("status") == "ok" and s.get("budgets"):
            yield name, s


def markdown_report(results: dict, plot_name: str | None = None) -> str:
    """The Markdown report: quality per scope, cost and speed, notes, all budgets."""
    cfg, ds = results["config"], results["dataset"]
    budgets = [str(b) for b in cfg["budgets"]]
    lines = [
        f"# Retrieval benchmark: {ds['name']} ({results['date']})",
        "",
        f"{ds['documents']} documents, {ds['questions']} questions; embedder "
        f"`{cfg['embedder']}`; budgets {', '.join(budgets)} tokens (MiniLM word pieces); "
        f"proxy-pointer k={cfg['k']}. Run time {results['seconds']:.0f}s.",
        "",
        f"**Packing rule.** {cfg['packing_rule']}",
        "",
        "Metrics (FORMAT.md): *any* = context holds a gold passage; *full* = all passages of "
        "one annotator; *recall* = best annotator's share of passages; *section* = a returned "
        "section's path equals a gold path or is its ancestor (*exact*: equals); MRR = 1/r for "
        "the first r passages that contain gold. Section metrics are n/a for text windows.",
    ]
    if ds.get("matching") == "loose":
        lines += ["", "**Loose matching** (PDF filings, gold text from another extractor): both "
                  "sides case-folded with every character that is not a letter or digit "
                  "removed; a passage is found when at least half of its distinct "
                  "14-character substrings occur in the context. *page* = a returned piece "
                  "of the question's document covers one of its gold pages (n/a for text "
                  "without a page map)."]
    if plot_name:
        lines += ["", f"![any-hit vs budget]({plot_name})"]
    lines += _quality(results, budgets) + _hit_counts(results, budgets)
    cost, notes = _cost(results)
    lines += cost
    if notes:
        lines += ["", "## Notes", "", *dict.fromkeys(notes)]
    return "\n".join(lines + _all_budgets(results, budgets)) + "\n"


def _quality(results: dict, budgets: list[str]) -> list[str]:
    """A table per scope: any-hit at every budget, the other metrics at the largest."""
    top = budgets[-1]
    lines: list[str] = []
    for scope in results["config"]["scopes"]:
        lines += ["", f"## Retrieval quality: {scope}", ""]
        head = ["method", *[f"any@{b}" for b in budgets], f"full@{top}", f"recall@{top}",
                f"section@{top}", f"exact@{top}", f"MRR@{top}", f"tokens@{top}"]
        lines += [_row(head), _row(["---"] * len(head))]
        for name, s in _scope_rows(results, scope):
            t = s["budgets"][top]
            lines.append(_row([name, *[_pct(s["budgets"][b]["any_hit"]) for b in budgets],
                               _pct(t["full_hit"]), _pct(t["evidence_recall"]),
                               _pct(t["section_hit"]), _pct(t["section_exact"]),
                               _num(t["mrr"], "{:.3f}"), _num(t["tokens_mean"], "{:.0f}")]))
    return lines


def _cost(results: dict) -> tuple[list[str], list[str]]:
    """The cost and speed table, and the notes its rows give."""
    cfg = results["config"]
    lines = ["", "## Cost and speed", "",
              "Build seconds include embedding (`computed` = texts the cache did not have); "
              "latency = retrieve + pack per question and budget, query encoding excluded "
              f"({_query_cost(results['query_embedding'])}, shared by all methods); peak = "
              "tracemalloc peak of a from-scratch rebuild (Python + numpy allocations).", ""]
    head = ["method", "build s", "units", "texts embedded (computed)", "LLM calls index",
            "LLM in tok index", "LLM calls/query", "index MiB", "peak MiB",
            *[f"p50/p95 ms {s}" for s in cfg["scopes"]]]
    lines += [_row(head), _row(["---"] * len(head))]
    notes: list[str] = []
    for name, m in results["methods"].items():
        if m.get("status") != "ok":
            notes.append(f"- **{name}** skipped: {m.get('reason')}")
            continue
        b = m["build"]
        extra = b.get("extra") or {}
        lat = []
        for scope in cfg["scopes"]:
            s = m["scopes"].get(scope, {})
            if s.get("status") == "ok" and s.get("latency_ms") is None:
                lat.append("n/a")
            elif s.get("status") == "ok":
                lat.append(f"{s['latency_ms']['p50']:.1f} / {s['latency_ms']['p95']:.1f}")
            else:
                status = s.get("status", "n/a")
                lat.append(status)
                notes.append(f"- **{name}** {scope}: {status} - {s.get('reason')}")
        qcalls = extra.get("query_llm_calls", 0)
        lines.append(_row([
            name, f"{b['seconds']:.1f}", str(b["units"]),
            f"{b['embed_texts']} ({b['embed_computed']})", str(b["llm_calls"]),
            str(b["llm_in_tokens"]), _num(qcalls, "{:g}"),
            _num(b["index_bytes"] / 2**20 if b["index_bytes"] is not None else None, "{:.2f}"),
            _num(b.get("peak_mib"), "{:.0f}"), *lat]))
        for note in b.get("notes") or []:
            notes.append(f"- **{name}**: {note}")
        if extra.get("mode"):
            notes.append(_pageindex_note(name, extra))
        for scope, s in (m.get("scopes") or {}).items():
            if s.get("answers"):
                a = s["answers"]
                notes.append(f"- **{name}** {scope}: answer F1 {_num(a['f1'], '{:.3f}')} at "
                             f"{a['budget']} tokens, {a['llm_in_tokens_per_query']:.0f} in / "
                             f"{a['llm_out_tokens_per_query']:.0f} out tokens per query")
    return lines, notes


def _all_budgets(results: dict, budgets: list[str]) -> list[str]:
    """Every metric at every budget, scope and method."""
    cfg = results["config"]
    lines = ["", "## All budgets", ""]
    head = ["method", "scope", "budget", "any", "full", "recall", "section", "exact", "MRR",
            "tokens", "cut"]
    lines += [_row(head), _row(["---"] * len(head))]
    for scope in cfg["scopes"]:
        for name, s in _scope_rows(results, scope):
            for b in budgets:
                t = s["budgets"][b]
                lines.append(_row([name, scope, b, _pct(t["any_hit"]), _pct(t["full_hit"]),
                                   _pct(t["evidence_recall"]), _pct(t["section_hit"]),
                                   _pct(t["section_exact"]), _num(t["mrr"], "{:.3f}"),
                                   _num(t["tokens_mean"], "{:.0f}"), _pct(t["cut_share"])]))
    return lines


def _count(agg: dict, metric: str) -> str:
    n = agg.get(f"{metric}_n") or 0
    if not n or agg.get(metric) is None:
        return "n/a"
    return f"{round(agg[metric] * n)}/{n}"


def _hit_counts(results: dict, budgets: list[str]) -> list[str]:
    """Any-hit and page-hit as counts per budget, for datasets with gold pages."""
    lines: list[str] = []
    for scope in results["config"]["scopes"]:
        rows = list(_scope_rows(results, scope))
        if not any((s["budgets"][b].get("page_hit_n") or 0) for _, s in rows for b in budgets):
            continue
        head = ["method", *[f"any@{b}" for b in budgets], *[f"page@{b}" for b in budgets],
                "right doc first"]
        lines += ["", f"## Any-hit and page-hit counts: {scope}", "",
                  _row(head), _row(["---"] * len(head))]
        for name, s in rows:
            lines.append(_row([name, *[_count(s["budgets"][b], "any_hit") for b in budgets],
                               *[_count(s["budgets"][b], "page_hit") for b in budgets],
                               _count(s["budgets"][budgets[-1]], "doc_first")]))
    return lines


def _query_cost(q: dict) -> str:
    if q.get("ms_per_query") is None:
        return "query vectors came from the cache"
    return f"{q['ms_per_query']:.1f} ms per query"


def _pageindex_note(name: str, extra: dict) -> str:
    base = (f"- **{name}** ({extra.get('pageindex_version')}, {extra['mode']} mode, model "
            f"`{extra.get('model')}`): {extra['index_llm_calls_per_doc']:.1f} LLM calls and "
            f"{extra['index_llm_in_tokens_per_doc']:.0f} prompt tokens per document at index "
            f"time; {extra['query_llm_calls']:g} call and {extra['query_llm_in_tokens']:.0f} "
            f"prompt tokens per query")
    if extra["mode"] == "placeholder":
        base += (" (placeholder replies: call counts and prompt tokens only; the query prompt "
                 "carries placeholder summaries, so it is a lower bound)")
    if extra.get("doc_errors") or extra.get("query_errors"):
        base += f"; errors: {extra['doc_errors']} documents, {extra['query_errors']} queries"
    return base + "."


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def plot_any_hit(results: dict, path: str | Path) -> bool:
    """Plot any-hit share against budget, one panel per scope; False without matplotlib."""
    plt = common.pyplot()
    if plt is None:
        return False
    scopes = results["config"]["scopes"]
    budgets = results["config"]["budgets"]
    fig, axes = plt.subplots(1, len(scopes), figsize=(6 * len(scopes), 5), squeeze=False,
                             sharey=True)
    for ax, scope in zip(axes[0], scopes, strict=True):
        for name, s in _scope_rows(results, scope):
            ys = [100 * (s["budgets"][str(b)]["any_hit"] or 0) for b in budgets]
            ax.plot(budgets, ys, marker="o", label=name,
                    linestyle="--" if name == "oracle" else "-")
        ax.set_title(f"{results['dataset']['name']}: {scope}")
        ax.set_xlabel("token budget (MiniLM word pieces)")
        ax.set_xticks(budgets)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("any-hit share (%)")
    axes[0][0].set_ylim(0, 102)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 5), fontsize=8,
                   frameon=False)
        fig.tight_layout(rect=(0, 0.1, 1, 1))
    else:
        axes[0][0].text(0.5, 0.5, "no quality measured", ha="center",
                        transform=axes[0][0].transAxes)
        fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
