"""Damage handling for the on-disk index, apart from the store's own reading and writing.

- `lance_failure`: the one translation of a LanceDB, Lance or Arrow failure (a Rust panic
  included) into IndexCorrupt (rebuild it; the manifest that vouched for the index is
  dropped) or IndexUnwritable (a full disk, a read-only folder: a message, nothing to
  rebuild); `guard_methods` applies it to every IndexStore
  method, so no LanceDB error leaves the store untranslated.
- `remove_tables`: a rebuild deletes only what codectx writes in an index folder of its own
  (indexer/storage/owner.py decides which those are), and LanceDB's table folders (`<name>.lance`) there.
- `intact_vector_tables`: the vectors tables (the embedding cache) that still read back
  whole, to keep across a rebuild.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
from codectx.indexer.errors import IndexCorrupt, IndexerError, unwritable, unwritable_reason
from codectx.indexer.walk.manifest import Manifest

_RUST_LOCATION = re.compile(r",? ?/[^ ,]*\.rs:\d+(?::\d+)?:?")


def lance_failure(exc: BaseException, index_dir: Path) -> IndexerError:
    """The one translation of a LanceDB/Lance/Arrow failure into codectx's errors."""
    if unwritable_reason(exc) is not None:
        return unwritable(index_dir, exc)
    # Rust source locations ("…, /rustc/…/result.rs:1896:29") say nothing to the user.
    detail = _RUST_LOCATION.sub("", " ".join(str(exc).split())).rstrip(" ,:")[:300] or type(exc).__name__
    # The manifest says "this index is whole": whoever finds otherwise (a search, `status`)
    # withdraws that, so the `codectx index` the message asks for looks instead of trusting it.
    with contextlib.suppress(OSError):
        Manifest.drop(index_dir)
    return IndexCorrupt(
        f"the index at {index_dir} cannot be read ({detail}); run `codectx index` to rebuild it"
    )


_LANCE_ERRORS = (OSError, ValueError, RuntimeError, pa.ArrowException)


def is_lance_failure(exc: BaseException) -> bool:
    # A Rust panic inside LanceDB arrives as pyo3's PanicException, a BaseException.
    return isinstance(exc, _LANCE_ERRORS) or type(exc).__name__ == "PanicException"


def translated(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap one IndexStore method (generators too) so LanceDB failures leave it translated."""

    def index_dir_of(args: tuple[Any, ...]) -> Path:
        for arg in args:  # the store (self) or, for class methods, the index folder argument
            found = arg if isinstance(arg, (str, Path)) else getattr(arg, "index_dir", None)
            if isinstance(found, (str, Path)):
                return Path(found)
        return Path(".")

    @contextlib.contextmanager
    def translating(args: tuple[Any, ...]) -> Iterator[None]:
        try:
            yield
        except IndexerError:
            raise
        except BaseException as exc:
            if not is_lance_failure(exc):
                raise
            raise lance_failure(exc, index_dir_of(args)) from None

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen(*args: Any, **kwargs: Any) -> Any:
            with translating(args):
                yield from fn(*args, **kwargs)

        return gen

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with translating(args):
            return fn(*args, **kwargs)

    return call


def guard_methods(cls: type, skip: Iterable[str] = ()) -> None:
    """Wrap every method of `cls` (static and class methods too) in `translated`."""
    for name, member in list(vars(cls).items()):
        if name.startswith("__") or name in skip:
            continue
        if isinstance(member, (staticmethod, classmethod)):
            setattr(cls, name, type(member)(translated(member.__func__)))
        elif inspect.isfunction(member):
            setattr(cls, name, translated(member))


def remove_tables(db_dir: Path, keep_vectors: bool, keep: Iterable[str] = ()) -> None:
    """Delete LanceDB's table folders under `db_dir` (vectors ones too unless `keep_vectors`,
    never those named in `keep`), and `db_dir` itself when it is a stray file or ends empty."""
    if db_dir.is_symlink() or db_dir.is_file():
        db_dir.unlink()  # `db` is codectx's name in its own index folder: not a user's file
        return
    if not db_dir.is_dir():
        return
    kept = set(keep)
    for entry in db_dir.iterdir():
        name = entry.name.removesuffix(".lance")
        if not entry.name.endswith(".lance") or name in kept:
            continue
        if keep_vectors and name.startswith("vectors_"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    if not any(db_dir.iterdir()):
        db_dir.rmdir()


def intact_vector_tables(db_dir: Path) -> set[str]:
    """Names of the vectors tables under `db_dir` whose rows all read back (never raises)."""
    if not db_dir.is_dir():
        return set()
    found = set()
    try:
        db = lancedb.connect(db_dir, read_consistency_interval=timedelta(0))
        names = [n for n in db.list_tables().tables if n.startswith("vectors_")]
    except BaseException as exc:
        if not is_lance_failure(exc):
            raise
        return set()
    for name in names:
        try:
            table = db.open_table(name)
            data = table.search().limit(None).to_arrow()
            if data.num_rows == table.count_rows() and data.schema.names == ["content_hash", "vector"]:
                found.add(name)
        except BaseException as exc:
            if not is_lance_failure(exc):
                raise
    return found
