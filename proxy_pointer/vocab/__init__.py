"""The filing vocabulary as data, user synonyms, and what a question means by them.

* :mod:`.phrases`: phrases matched word by word (the one text key of this package).
* :mod:`.filings`: ``filings.toml`` typed (:data:`~.filings.FILINGS`): forms, statements,
  line items, concepts, months, legal suffixes, exchanges.
* :mod:`.synonyms`: synonym files in the Solr / Elasticsearch format.
* :mod:`.understanding`: a question's expansion (concepts, statements, items, synonyms).
"""
