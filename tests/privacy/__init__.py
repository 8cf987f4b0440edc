"""Tests of codectx/privacy/: never-send policy, redaction, the egress gate, the audit log, confinement, no
telemetry.
"""
