"""A disk cache for the code that attrs, cattrs and dataclasses generate while a process starts.

`lsprotocol.types` defines ~570 attrs classes, and attrs writes each class's `__init__`,
`__eq__` and friends as Python source and compiles it, every time the module is imported:
~700 calls to `compile`, about half of the language server's import time (0.42 s of `import
lsprotocol.types` on the 2-core development machine, 0.20 s with this cache). cattrs does the
same for each message type the first time one is (un)structured (`initialize`, the capability
registration, the first completion), and `dataclasses` for codectx's own classes. Python caches
the bytecode of modules in `.pyc` files, but not of these generated functions.

`cache_generated_code()` (called by `codectx lsp` before it imports pygls) gives those three
modules a `compile` (an `exec` for dataclasses) that looks each source text up in a dict of code
objects loaded from one `marshal` file, and compiles only what it has not seen. At exit the file
is rewritten, atomically, if the process compiled anything new: what it loaded plus what it
compiled, or only what it used once stale entries would outnumber those (a script whose text
changes every run, such as one embedding a per-process `hash()`, cannot pile up).

The key is a hash of the source text, the file name, the mode and the compiler flags, so a new
attrs or cattrs version that writes other source simply misses; the file's name carries the
interpreter's bytecode magic number, since marshalled code only loads on the interpreter that
wrote it. The file is in the user's cache folder (settings.cache_dir), as trusted as their
`.pyc` files: nothing from a workspace reaches it. A file that cannot be read or does not hold
what this module writes is ignored (and replaced at exit).
"""

from __future__ import annotations
import __future__

import atexit
import builtins
import contextlib
import hashlib
import importlib.util
import logging
import marshal
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 32 * 2**20  # ~1.3 MB for the language server; a larger file is not ours
# `compile` and `exec` inherit their caller's future flags: attrs and cattrs compile with
# `from __future__ import annotations` in force, dataclasses without. The stand-ins pass them.
_ANNOTATIONS = __future__.annotations.compiler_flag


def default_path() -> Path:
    from codectx.settings import cache_dir

    tag = importlib.util.MAGIC_NUMBER.hex()
    return cache_dir() / f"generated-code-{sys.implementation.cache_tag}-{tag}.marshal"


class GeneratedCodeCache:
    """Code objects by the hash of their source; `compile` answers from it or compiles and keeps."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.loaded = self._load(path)
        self.used: dict[bytes, CodeType] = {}
        self.compiled = 0  # sources compiled by this process (cache misses)
        self._lock = threading.Lock()

    @staticmethod
    def _load(path: Path) -> dict[bytes, CodeType]:
        try:
            with path.open("rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                return {}
            codes = marshal.loads(data)
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        if not isinstance(codes, dict):
            return {}
        if not all(isinstance(k, bytes) and isinstance(v, CodeType) for k, v in codes.items()):
            return {}
        return codes

    def compile(self, source: Any, filename: str, mode: str, flags: int) -> CodeType:
        if not isinstance(source, str):  # bytes or an AST: not what the generators pass
            code: CodeType = builtins.compile(source, filename, mode, flags, True)
            return code
        key = hashlib.blake2b(
            f"{mode}\0{flags}\0{filename}\0".encode() + source.encode("utf-8", "surrogatepass"),
            digest_size=16,
        ).digest()
        found = self.loaded.get(key)
        if found is None:
            found = builtins.compile(source, filename, mode, flags, True)
            with self._lock:
                self.compiled += 1
        self.used[key] = found
        return found

    def compiler(self, flags: int) -> Any:
        """A stand-in for the builtin `compile`, for a module compiling with these future flags."""

        def cached_compile(
            source: Any,
            filename: str,
            mode: str,
            extra: int = 0,
            dont_inherit: bool = False,
            optimize: int = -1,
        ) -> CodeType:
            if extra or dont_inherit or optimize != -1:  # not a call the generators make
                code: CodeType = builtins.compile(source, filename, mode, extra | flags, True, optimize)
                return code
            return self.compile(source, filename, mode, flags)

        return cached_compile

    def executor(self, flags: int) -> Any:
        """A stand-in for the builtin `exec`, for dataclasses (which passes source text)."""

        def cached_exec(source: Any, globals_: Any = None, locals_: Any = None) -> None:
            code = self.compile(source, "<string>", "exec", flags) if isinstance(source, str) else source
            builtins.exec(code, globals_, locals_)

        return cached_exec

    def save(self) -> bool:
        """Write the file again if this process compiled anything: what it loaded and what it used
        (only what it used, once the loaded entries outnumber those twice: stale ones go);
        False if nothing was written."""
        with self._lock:
            if not self.compiled:
                return False
            used = dict(self.used)
            self.compiled = 0
        codes = {**self.loaded, **used} if len(self.loaded) <= 2 * len(used) else used
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".generated-code-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(marshal.dumps(codes))
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:  # a read-only or full cache folder: the next start compiles again
            log.debug("generated-code cache not written to %s: %s", self.path, exc)
            return False
        return True


def _future_flags(module: ModuleType) -> int:
    """The future flags `compile` inherits when called from this module's code."""
    return _ANNOTATIONS if getattr(module, "annotations", None) is __future__.annotations else 0


def cache_generated_code(path: Path | None = None) -> GeneratedCodeCache:
    """Give attrs, cattrs and dataclasses the cached compile; saved at exit. Call once, first."""
    cache = GeneratedCodeCache(path or default_path())
    import dataclasses

    # A module global named like a builtin shadows the builtin for that module's code only.
    dataclasses.exec = cache.executor(_future_flags(dataclasses))  # type: ignore[attr-defined]
    with contextlib.suppress(ImportError):  # pygls brings both; a library user may not have them
        import attr._make
        import cattrs.gen
        import cattrs.gen.typeddicts

        for module in (attr._make, cattrs.gen, cattrs.gen.typeddicts):
            module.compile = cache.compiler(_future_flags(module))  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache
