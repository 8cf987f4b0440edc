"""The index folder: LanceDB tables, schema, full text, the typed IndexReader (README.md)."""
