"""Search over one committed generation: the reader (:mod:`.corpus`), ranking of chunk hits
into sections, packing into a token budget, the :class:`~.retrieval.Retriever` that runs
the steps, and synthesis of an answer with checked citations."""
