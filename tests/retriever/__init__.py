"""Tests of retriever/ (codectx.retriever): completion context, ranking, hybrid search, `codectx eval`."""
