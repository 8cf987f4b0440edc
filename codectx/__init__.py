"""codectx: a coding assistant that keeps source code on the developer's machine."""

__version__ = "0.1.0"
