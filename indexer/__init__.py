"""codectx.indexer"""
