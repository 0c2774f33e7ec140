"""Search over one committed generation: what a request may ask (:mod:`.config`), the
reader (:mod:`.corpus`), ranking of chunk hits into sections (:mod:`.ranking`, every
candidate step in run order), packing into a token budget (:mod:`.packing`), the result
type (:mod:`.sections`), the :class:`~.retrieval.Retriever` that runs the steps, and
synthesis of an answer with checked citations (:mod:`.synthesis`)."""
