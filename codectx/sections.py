"""The typed sections of Settings: one frozen dataclass per section of codectx/schema.py.

`settings.backend.url` is a `BackendSettings.url: str | None`, so mypy checks
every use. The schema stays the one source of keys, defaults, help and trust
flags; these classes only give the resolved values their types.
tests/core/test_settings.py fails when the two drift (a key added to one and not
the other, or a type that differs), and building Settings fails at once
(TypeError) on a key either side lacks.

Schema types map to Python types as in `PYTHON_TYPES`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

# schema Key.type -> the annotation its field carries here
PYTHON_TYPES = {
    "str": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "list": "list[str]",
    "path": "str",
    "optional_str": "str | None",
}


class _Section:
    """What every section offers besides its fields."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # each subclass is a dataclass

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class IndexSettings(_Section):
    index_dir: str | None
    max_file_bytes: int
    never_index: list[str]
    exclude: list[str]
    model: str
    embed_backend: str
    embed_batch_size: int
    chunk_max_chars: int
    embed: bool
    parse_timeout_s: float


@dataclass(frozen=True)
class RetrieverSettings(_Section):
    k: int
    budget_tokens: int
    chat_budget_tokens: int
    prefix_share: float
    suffix_share: float
    dense_weight: float
    fts_weight: float
    symbol_weight: float
    name_words_weight: float
    name_words_dense_weight: float
    test_weight: float
    doc_weight: float
    calls_weight: float
    identifier_boost: float
    search_depth: int
    rrf_k: float
    name_weight: float
    context_search: bool
    context_dense: bool
    context_embed_always: bool
    used_weight: float
    pending_weight: float
    imported_weight: float
    callee_weight: float
    receiver_weight: float
    affinity_weight: float
    neighbour_weight: float
    tested_weight: float
    class_member_weight: float
    slot_weight: float
    target_weight: float
    statement_weight: float
    definition_max_tokens: int


@dataclass(frozen=True)
class PrivacySettings(_Section):
    redact: bool
    strict: bool
    never_send: list[str]
    max_request_bytes: int
    anonymize_paths: bool
    offline: bool
    keep_payloads: bool
    scan_timeout_s: float


@dataclass(frozen=True)
class BackendSettings(_Section):
    url: str | None
    api_key: str | None
    model: str | None
    family: str
    verify_tls: bool
    ca_bundle: str | None
    connect_timeout_s: float
    first_token_timeout_s: float
    first_byte_timeout_s: float
    total_timeout_s: float
    max_tokens: int
    chat_max_tokens: int
    temperature: float
    retries: int
    breaker_interval_s: float
    profile: str
    vllm_python: str | None


@dataclass(frozen=True)
class LspSettings(_Section):
    completion: bool
    debounce_ms: int
    request_budget_ms: int
    max_document_bytes: int
    index_on_open: bool
    watch_interval_s: float
    metrics_port: int
    metrics_host: str
    metrics_allow_remote: bool


# schema section name -> its dataclass (the order of `codectx config show`)
SECTION_TYPES: dict[str, type[_Section]] = {
    "index": IndexSettings,
    "retriever": RetrieverSettings,
    "privacy": PrivacySettings,
    "backend": BackendSettings,
    "lsp": LspSettings,
}
