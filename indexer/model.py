"""The indexer's data: what a parsed file yields and what the store keeps.

Lines are 0-based and inclusive (`end_line` is the last line of the chunk);
bytes are 0-based offsets into the UTF-8 file, end exclusive. Paths are
POSIX, relative to the workspace root.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Chunk:
    path: str
    language: str
    kind: str  # function, method, class, module, text, ...
    symbol: str  # short name ("send"), "" for module-level or text chunks
    qualname: str  # qualified name ("Client.send"), "" when none
    signature: str  # the definition's header line(s); "" when none
    doc: str  # docstring or leading comment, "" when none
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    text: str
    content_hash: str  # sha256 hex of `text`; the embedding cache key (with the model id)

    @property
    def id(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}:{self.content_hash[:12]}"


@dataclass(frozen=True)
class Definition:
    name: str
    qualname: str
    kind: str  # function, method, class, interface, struct, enum, variable, constant, type, module
    path: str
    language: str
    start_line: int
    end_line: int
    exported: bool = True  # visible outside its file (language rules), best effort


@dataclass(frozen=True)
class Reference:
    """An identifier used in the file; `chain` is the attribute chain ending at it ("self.session.send")."""

    name: str
    line: int
    column: int
    chain: str = ""


@dataclass(frozen=True)
class Import:
    """One import statement's effect.

    `module` is the module as written ("..utils", "./client", "github.com/x/y/pkg");
    `names` are (imported name, local alias) pairs, empty for `import module`;
    `alias` is the local name bound to the module itself, if any;
    `resolved` is the workspace-relative path of the imported file or package
    folder when it could be resolved, else "".
    """

    module: str
    names: tuple[tuple[str, str], ...] = ()
    alias: str = ""
    resolved: str = ""
    line: int = 0


@dataclass
class ParsedFile:
    path: str
    language: str
    chunks: list[Chunk] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    syntax_errors: int = 0  # count of ERROR/MISSING nodes; the rest of the file is still indexed
    parse_timed_out: bool = False  # past index.parse_timeout_s: chunked as plain text, no symbols
