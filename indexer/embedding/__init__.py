"""Chunk and query embeddings, computed locally (README.md)."""
