"""Parsing: Markdown into a skeleton tree (headings, line bounds, breadcrumbs), noise
sections marked, each section's text into blocks and breadcrumb-prefixed chunks; documents
without headings into topical segments. No LLM unless asked (noise labelling, summaries)."""
