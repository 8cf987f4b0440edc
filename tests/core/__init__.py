"""Tests of codectx/'s top-level modules: settings and their trust layers, platforms, process tuning."""
