"""codectx.retriever"""
