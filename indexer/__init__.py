"""codectx.indexer: a workspace into an index folder (README.md says which sub-package owns what)."""
