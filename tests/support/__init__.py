"""Helpers the tests share (not tests): loopback servers, LSP sessions, fixture indexes, the vLLM engine."""
