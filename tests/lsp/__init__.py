"""Tests of lsp/ (codectx.lsp): the real `codectx lsp` process over stdio, and its pure parts."""
