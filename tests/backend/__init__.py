"""Tests of backend/ (codectx.backend): the model-server client and transport, prompts, serving, deploy, the
real vLLM engine.
"""
