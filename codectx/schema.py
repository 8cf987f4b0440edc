"""The settings schema: every key codectx understands, as data.

Each key has a type, a default, a help line and flags saying whether it can
weaken privacy (send code elsewhere, turn off redaction, shrink never-send
lists) or choose where codectx writes and which code it loads (`trusted`).
Both kinds are ignored in a workspace's `.codectx.toml`: a cloned repository
must not be able to redirect a user's code to its own server (or, through the
model name a gateway routes by, to another provider), write the index outside
itself or have its own model folder loaded. Keys that set how much codectx
reads or sends have a `workspace_max` too: a workspace value above it is
ignored with a warning, like any out-of-range value there; the user's own
config, the environment and flags may still go up to `max`.

Each package owns its own section; add keys there, nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    type: str  # "str", "int", "float", "bool", "list", "path", "optional_str"
    default: Any
    help: str
    privacy: bool = False  # True: may only come from user-level config, env or flags
    # True: chooses where codectx writes or which code it loads or runs; user-level only too.
    trusted: bool = False
    untrusted_values: tuple[str, ...] = ()  # values of a trusted key a workspace may still choose
    choices: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    # The largest value a workspace (untrusted) layer may set; None: `max` for every layer.
    workspace_max: float | None = None
    # A list each layer adds to (user config, workspace, environment, flags): a later layer never
    # removes what an earlier one set, so a cloned repository's `never_index = []` clears nothing.
    accumulates: bool = False


SCHEMA: dict[str, dict[str, Key]] = {
    "index": {
        "index_dir": Key(
            "optional_str", None, "Where the index lives (default: <workspace>/.codectx).", trusted=True
        ),
        "max_file_bytes": Key(
            "int",
            1_000_000,
            "Files larger than this are skipped (a workspace config may set at most 10 MB).",
            min=1,
            workspace_max=10_000_000,
        ),
        "never_index": Key(
            "list",
            [],
            "Extra globs that are never indexed (added to the built-in secret-file list; each config "
            "layer adds its own, none removes another's).",
            accumulates=True,
        ),
        "exclude": Key(
            "list",
            [],
            "Extra globs to skip (gitignore syntax; each config layer adds its own, none removes another's).",
            accumulates=True,
        ),
        "model": Key(
            "str",
            "all-MiniLM-L6-v2",
            "Embedding model: 'all-MiniLM-L6-v2' (bundled) or a sentence-transformers folder path "
            "(a folder only from user-level settings).",
            trusted=True,
            untrusted_values=("all-MiniLM-L6-v2",),
        ),
        "embed_backend": Key(
            "str",
            "auto",
            "How embeddings are computed: 'onnx-int8' (fast), 'torch', or 'auto'.",
            choices=("auto", "onnx-int8", "torch"),
        ),
        "embed_batch_size": Key("int", 32, "Chunks per embedding batch.", min=1, max=4096),
        "chunk_max_chars": Key(
            "int", 1500, "Chunk size budget in non-whitespace characters.", min=100, max=100_000
        ),
        "embed": Key("bool", True, "Compute vectors (false: lexical and symbol index only)."),
        "parse_timeout_s": Key(
            "float",
            2.0,
            "Time budget for parsing one file; past it the file is indexed as plain text (line windows).",
            min=0.01,
            max=600,
        ),
    },
    "retriever": {
        "k": Key("int", 10, "Results returned by search.", min=1, max=1000),
        "budget_tokens": Key(
            "int",
            2048,
            "Token budget of a completion prompt (a workspace config may set at most 16384).",
            min=128,
            max=1_000_000,
            workspace_max=16_384,
        ),
        "chat_budget_tokens": Key(
            "int",
            6144,
            "Token budget of a chat turn's implicit context (at most half of what the model's window "
            "leaves after the answer's reserve; a workspace config may set at most 32768).",
            min=64,
            max=1_000_000,
            workspace_max=32_768,
        ),
        "prefix_share": Key("float", 0.5, "Share of the budget for code before the cursor.", min=0, max=1),
        "suffix_share": Key("float", 0.15, "Share of the budget for code after the cursor.", min=0, max=1),
        "dense_weight": Key("float", 1.0, "Fusion weight of the vector list.", min=0),
        "fts_weight": Key("float", 1.0, "Fusion weight of the full-text list.", min=0),
        "symbol_weight": Key("float", 1.0, "Fusion weight of the symbol-name list.", min=0),
        "name_words_weight": Key(
            "float",
            0.5,
            "Fusion weight of the list of definitions whose names are made of a prose query's words "
            "(retriever/namewords.py) in searches without vectors; 0 turns it off.",
            min=0,
        ),
        "name_words_dense_weight": Key(
            "float",
            0.0,
            "Fusion weight of that names list in searches with vectors; 0 leaves it out there.",
            min=0,
        ),
        "test_weight": Key(
            "float",
            0.5,
            "Multiplier of a test file's fused score in prose searches (tests/, test_*.py, *_test.py, "
            "*.spec.ts, *.test.js); 1 ranks tests like other code. Identifier queries are not affected.",
            min=0,
            max=1,
        ),
        "doc_weight": Key(
            "float",
            0.5,
            "Multiplier of the fused score of documentation (Markdown, reStructuredText, plain "
            "text) and of module-level code outside definitions (a module's docstring, imports, "
            "top-level statements) in prose searches; 1 ranks them like definitions. A question "
            "about the documentation itself, and identifier queries, are not affected.",
            min=0,
            max=1,
        ),
        "calls_weight": Key(
            "float",
            0.35,
            "Fusion weight, in prose searches with vectors, of the definitions that the first "
            "fused hits call (a test named after the behaviour asked about votes for the function "
            "it tests); 0 leaves that list out.",
            min=0,
        ),
        "identifier_boost": Key(
            "float", 2.0, "Multiplier of the full-text and symbol weights for identifier queries.", min=0
        ),
        "search_depth": Key("int", 50, "How deep each source list is read before fusion.", min=1, max=1000),
        "rrf_k": Key(
            "float", 10.0, "Reciprocal-rank fusion constant: lower trusts each list's top ranks more.", min=0
        ),
        "name_weight": Key(
            "float",
            0.5,
            "Share of a chunk's name-and-signature vector in its dense score (the rest is the body "
            "vector); 0 ranks by the body alone. Chunks without a name score 0 on that share.",
            min=0,
            max=1,
        ),
        "context_search": Key(
            "bool", True, "Completion context also runs a hybrid search around the cursor."
        ),
        "context_dense": Key(
            "bool", True, "The completion context search embeds its query (false: lexical only, faster)."
        ),
        "context_embed_always": Key(
            "bool",
            False,
            "Embed the completion scope even when definitions fill the budget: ranks likely next "
            "calls better, at the cost of one query embedding per scope change.",
        ),
        "used_weight": Key(
            "float", 0.25, "Context ranking weight of definitions of names the cursor's scope uses.", min=0
        ),
        "pending_weight": Key(
            "float",
            2.0,
            "Context ranking weight of definitions of names the enclosing definition's head binds "
            "but its body does not use yet (a parameter, a return type): what the body uses next.",
            min=0,
        ),
        "imported_weight": Key(
            "float",
            1.5,
            "Context ranking weight of names the file imports but the scope does not use yet.",
            min=0,
        ),
        "callee_weight": Key(
            "float",
            0.75,
            "Context ranking weight of definitions that code similar to the scope calls.",
            min=0,
        ),
        "receiver_weight": Key(
            "float",
            0.5,
            "Context ranking weight of what the rest of the workspace calls on the receivers in the "
            "cursor's scope (`ctx.` -> the methods code elsewhere calls on `ctx`).",
            min=0,
        ),
        "affinity_weight": Key(
            "float",
            1.0,
            "Context ranking weight of closeness to the cursor's scope (the rare words a "
            "definition's head shares with it), over the imported, receivers' and similar code's "
            "candidates.",
            min=0,
        ),
        "neighbour_weight": Key(
            "float",
            1.5,
            "Context ranking weight of what the code around the cursor's scope in the same file "
            "calls (a new test calls what the tests next to it call).",
            min=0,
        ),
        "tested_weight": Key(
            "float",
            2.0,
            "Context ranking weight, in test files, of definitions the enclosing test's name names "
            "(`test_timetz` -> `timetz`).",
            min=0,
        ),
        "class_member_weight": Key(
            "float",
            0.25,
            "Context ranking weight of the methods of a receiver whose class is known (constructed, "
            "annotated, a factory's or a pytest fixture's return type), on top of their place among "
            "the receivers' definitions.",
            min=0,
        ),
        "slot_weight": Key(
            "float",
            4.0,
            "How much the kind of expression at the cursor moves definitions before the callee is "
            "typed: after `if (`, `&&` or `not ` predicates (`is_x`, `-> bool`) score (1 + this) "
            "times more, elsewhere that much less; after `raise `, `new ` and `await ` exception "
            "classes, classes and async definitions score (1 + this) times more, after `for x in ` "
            "iterables, after `return ` what makes the enclosing definition's declared return type "
            "(a predicate's return is a condition) and what makes the declared type of a name being "
            "assigned; definitions declared to return nothing score that much less where a value is "
            "expected; 0 turns it off.",
            min=0,
        ),
        "target_weight": Key(
            "float",
            1.0,
            "How much a definition whose name shares a word with the name being assigned at the "
            "cursor moves up before the callee is typed (`headers = ` -> `Headers`): its score is "
            "(1 + this) times more; 0 turns it off.",
            min=0,
        ),
        "statement_weight": Key(
            "float",
            1.0,
            "How much a definition declared to return nothing (`-> None`, `: void`) moves up at the "
            "start of a statement before the callee is typed: its score is (1 + this) times more; 0 "
            "turns this off (where a value is expected it scores (1 + slot_weight) times less, "
            "which slot_weight turns off).",
            min=0,
        ),
        "definition_max_tokens": Key(
            "int", 400, "A definition longer than this is cut to its head in completion context.", min=16
        ),
    },
    "privacy": {
        "redact": Key("bool", True, "Redact secrets from everything that leaves the machine.", privacy=True),
        "strict": Key("bool", False, "Also redact high-entropy literals.", privacy=True),
        "never_send": Key(
            "list",
            [],
            "Extra globs whose content is never sent (added to the never-index list; each config layer "
            "adds its own).",
            privacy=True,
            accumulates=True,
        ),
        "max_request_bytes": Key(
            "int", 262_144, "Largest request body that may be sent.", privacy=True, min=1024
        ),
        "anonymize_paths": Key(
            "bool", False, "Replace file paths in prompts with opaque names.", privacy=True
        ),
        "offline": Key("bool", False, "Build and log payloads but never send them.", privacy=True),
        "keep_payloads": Key(
            "bool",
            True,
            "Keep the exact (redacted) bytes of each request beside the audit log.",
            privacy=True,
        ),
        "scan_timeout_s": Key(
            "float", 2.0, "A redaction scan slower than this blocks the send.", privacy=True, min=0.01
        ),
    },
    "backend": {
        "url": Key(
            "optional_str", None, "Model server base URL, e.g. http://127.0.0.1:8000/v1.", privacy=True
        ),
        "api_key": Key("optional_str", None, "API key for the model server.", privacy=True),
        # A gateway (LiteLLM-style) routes by model name: the name can send code to another provider.
        "model": Key(
            "optional_str",
            None,
            "Served model name (default: the server's first model).",
            privacy=True,
        ),
        "family": Key(
            "str",
            "auto",
            "Prompt family: auto, qwen, deepseek, starcoder2, codellama.",
            choices=("auto", "qwen", "deepseek", "starcoder2", "codellama"),
        ),
        "verify_tls": Key("bool", True, "Verify the server's TLS certificate.", privacy=True),
        "ca_bundle": Key("optional_str", None, "Custom CA bundle file for TLS.", privacy=True),
        # A workspace's own config may lengthen the waits only so far: a repository must not make
        # every request hang on a stalled server (red team 12).
        "connect_timeout_s": Key("float", 2.0, "Connect timeout.", min=0.01, workspace_max=30.0),
        "first_token_timeout_s": Key(
            "float", 10.0, "Time allowed until the first token.", min=0.01, workspace_max=120.0
        ),
        "first_byte_timeout_s": Key(
            "float",
            3.0,
            "Time allowed for a connected server to start answering (headers of a stream, /v1/models, "
            "/tokenize); generated answers that are not streamed get the total timeout.",
            min=0.01,
            workspace_max=60.0,
        ),
        "total_timeout_s": Key(
            "float", 30.0, "Time allowed for a whole request.", min=0.01, workspace_max=600.0
        ),
        "max_tokens": Key("int", 128, "Largest completion, in tokens.", min=1, max=32768),
        "chat_max_tokens": Key(
            "int",
            1024,
            "Largest chat answer, in tokens: kept free in the model's window (at most a quarter of it).",
            min=16,
            max=32768,
        ),
        "temperature": Key("float", 0.2, "Sampling temperature.", min=0, max=2),
        "retries": Key("int", 2, "Retries on connect errors and 429/503 before any token.", min=0, max=10),
        "breaker_interval_s": Key(
            "float", 10.0, "After a failure, how long requests fail fast before one probe.", min=0
        ),
        "profile": Key("str", "cpu-dev", "Serving profile for `codectx backend serve`."),
        "vllm_python": Key(
            "optional_str",
            None,
            "Python interpreter with vLLM installed, used by `codectx backend serve` "
            "(default: $CODECTX_VLLM_PYTHON, else the current interpreter).",
            trusted=True,
        ),
    },
    "lsp": {
        "completion": Key("bool", True, "Offer AI completions."),
        "debounce_ms": Key(
            "int", 75, "Wait this long after a keystroke before asking the model.", min=0, workspace_max=2000
        ),
        "request_budget_ms": Key(
            "int",
            3000,
            "A completion request taking longer returns what it has.",
            min=50,
            workspace_max=30000,
        ),
        "max_document_bytes": Key(
            "int", 2_000_000, "Documents larger than this get no completions or refactors.", min=1024
        ),
        "index_on_open": Key(
            "bool", True, "Build or refresh each workspace folder's index in the background at start."
        ),
        "watch_interval_s": Key(
            "float",
            30.0,
            "When the editor cannot report file changes, re-check the workspace this often (0: never).",
            min=0,
        ),
        # A workspace must not open ports on the user's machine: user-level only.
        "metrics_port": Key(
            "int",
            0,
            "Serve codectx's own Prometheus metrics at http://HOST:PORT/metrics (0: off).",
            privacy=True,
            min=0,
            max=65535,
        ),
        "metrics_host": Key(
            "str", "127.0.0.1", "Address of the metrics endpoint (loopback unless allowed).", privacy=True
        ),
        "metrics_allow_remote": Key(
            "bool", False, "Let lsp.metrics_host be a non-loopback address.", privacy=True
        ),
    },
}


def user_level_only(spec: Key, value: object = None) -> bool:
    """True when a workspace (untrusted) layer may not set this key to `value`."""
    if not (spec.privacy or spec.trusted):
        return False
    return not (spec.untrusted_values and value in spec.untrusted_values)


def why_user_level(spec: Key) -> str:
    if spec.privacy:
        return "settings that can send code elsewhere or weaken privacy"
    return "settings that choose where codectx writes or which code it loads"
