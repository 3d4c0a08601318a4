"""The store's dialect backends: the protocol (`base`), one implementation per dialect
(`postgres`, `sqlite`), and the choice between them (`factory`)."""
