"""codectx.lsp"""
