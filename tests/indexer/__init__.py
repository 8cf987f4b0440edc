"""Tests of indexer/ (codectx.indexer): parsing, the workspace walk and freshness, storage, embedding,
`codectx index`.
"""
