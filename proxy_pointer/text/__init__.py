"""Text primitives every layer reads: a converted document's pages (:mod:`.pages`) and what
a table row looks like in plain text (:mod:`.rows`). They import nothing of the library."""
