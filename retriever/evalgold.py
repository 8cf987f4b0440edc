"""Which call sites give `codectx eval` a trustworthy gold answer.

A cross-file task's gold is "the only workspace definition of the called name". That is a
guess, and for some calls a wrong one: the call reaches something outside the workspace, or
something the name cannot refer to from there. Such tasks measure the eval's guess, not the
retriever, so they are left out:

- `pformat(` / `lib.name(` where the file binds the name (or the chain's head) by an import
  from outside the workspace: the library's function merely shares our name;
- `name(` (bare) whose only definition is a method or a function nested in another: a bare
  name never reaches an attribute;
- `next(` / `format(` (bare) naming a Python builtin that no import of the file rebinds;
- `values.extend(` / `token.trim(`: a standard type's method name on a receiver that is not
  bound to a workspace module, class or constructed object in view (a list's `extend`, not
  `Environment.extend`);
- `JSON.stringify(` / `Reflect.ownKeys(`: a JavaScript global's member;
- `/^is[A-Z]/.test(` / `f().strip(`: a standard type's method name on a receiver the indexed
  chain does not name (a literal, a call's result).
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable, Sequence

from codectx.indexer.model import Definition, Import
from codectx.retriever.callees import reachable_as_attribute
from codectx.retriever.definitions import RESOLVED_LANGUAGES, SELF_NAMES, local_types

PY_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("_"))
PY_TYPE_METHODS = frozenset(
    n for t in (list, dict, str, set, bytes, tuple, frozenset) for n in dir(t) if not n.startswith("_")
)
# Methods of JavaScript's built-in prototypes (Array, String, Map/Set, Promise, Object, Function).
_JS_TYPE_METHODS_TEXT = (
    "push pop shift unshift map filter forEach reduce reduceRight slice splice indexOf lastIndexOf "
    "includes join split replace replaceAll trim trimStart trimEnd toString toLowerCase toUpperCase "
    "call apply bind then catch finally hasOwnProperty set get has delete clear concat keys values "
    "entries some every find findIndex sort reverse fill flat flatMap startsWith endsWith "
    "padStart padEnd charAt charCodeAt substring substr match matchAll test exec add"
)
JS_TYPE_METHODS = frozenset(_JS_TYPE_METHODS_TEXT.split())
_JS_GLOBALS_TEXT = (
    "JSON Object Math Array Promise console Number String Reflect Symbol Date Buffer process Error "
    "Map Set WeakMap WeakSet Proxy Intl RegExp globalThis window document URL URLSearchParams "
    "Boolean BigInt TypeError RangeError"
)
JS_GLOBALS = frozenset(_JS_GLOBALS_TEXT.split())
JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
VIEW_LINES = 200  # lines before a call searched for its receiver's constructor
_SPLIT = re.compile(r"\?\.|\.|::|->")
_ATTRIBUTE_DOT = re.compile(r"(?:(?<!\.)\.|\?\.)\s*$")  # `x.` or `x?.` before a name, not `...` (spread)


def library_names(imports: Sequence[Import]) -> set[str]:
    """Local names bound by imports that the indexer could not resolve into the workspace."""
    return _bound_names(imp for imp in imports if not imp.resolved)


def workspace_names(imports: Sequence[Import]) -> set[str]:
    """Local names bound by imports resolved into the workspace (modules and imported names)."""
    return _bound_names(imp for imp in imports if imp.resolved)


def _bound_names(imports: Iterable[Import]) -> set[str]:
    """The local names these imports bind: an alias, the imported names, else the module's head."""
    names: set[str] = set()
    for imp in imports:
        if imp.alias:
            names.add(imp.alias)
        names.update(alias or original for original, alias in imp.names if original != "*")
        if not imp.names and not imp.alias:
            names.add(re.split(r"[./:]+", imp.module.lstrip("."))[0])
    return names


def doubtful_gold(
    chain: str,
    gold: Definition,
    language: str,
    imports: Sequence[Import],
    lines: Sequence[str] = (),
    line: int = 0,
    column: int | None = None,
) -> str:
    """Why `chain(` (as written on row `line` of `lines`, the file, the name at `column`)
    probably does not reach `gold`; "" when the gold looks right."""
    parts = [p for p in _SPLIT.split(chain.replace(" ", "")) if p]
    if not parts or language not in RESOLVED_LANGUAGES:
        return ""
    head, name = parts[0], parts[-1]
    library = library_names(imports)
    if head in library:
        return "bound by a library import"
    if len(parts) == 1:
        if "." in gold.qualname or gold.kind == "method":
            return "bare call, gold is a method or nested function"
        if language == "python" and name in PY_BUILTINS and name not in workspace_names(imports):
            return "bare name is a Python builtin"
        row = lines[line] if column is not None and 0 <= line < len(lines) else ""
        unnamed = _ATTRIBUTE_DOT.search(row[:column]) is not None
        if unnamed and name in _std_methods(language):
            # `/^is[A-Z]/.test(`, `f().strip(`: an attribute of something no name holds.
            return "a standard type's method name on an unnamed receiver (a literal, a call's result)"
        return ""
    if language in JS_LANGUAGES and head in JS_GLOBALS:
        return "receiver is a JavaScript global"
    if not reachable_as_attribute(gold):
        return "gold is a function nested in another"
    std = _std_methods(language)
    own_method = len(parts) == 2 and head in SELF_NAMES  # `self.extend(`: the class's own
    if name in std and not own_method and head not in workspace_names(imports):
        before = "\n".join(lines[max(0, line - VIEW_LINES) : line + 1])
        if len(parts) > 2 or head not in local_types(before):
            return "a standard type's method name on a receiver of unknown type"
    return ""


def _std_methods(language: str) -> frozenset[str]:
    """The names of the standard types' methods in `language` (none for the rest)."""
    if language == "python":
        return PY_TYPE_METHODS
    return JS_TYPE_METHODS if language in JS_LANGUAGES else frozenset()
