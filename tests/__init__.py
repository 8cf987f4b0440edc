"""The codectx test suite (a package, so test modules can share helpers such as tests.support.vllm_engine)."""
