"""The workspace walk and freshness: discovery, ignore rules, the walk record, the manifest (README.md)."""
