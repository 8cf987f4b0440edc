"""Tests of codectx/app/: the WorkspaceSession every surface calls (complete, refactor, explain, search,
files).
"""
