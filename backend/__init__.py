"""codectx.backend"""
