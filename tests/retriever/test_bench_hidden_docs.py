"""The chat benchmarks' copy without docstrings (bench/hidden_docs.py) stays valid code: a doc
longer than its chunk, a body that was only a doc, decorators, and JSDoc blocks."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import SimpleNamespace

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "bench"))

from hidden_docs import hidden_copy  # type: ignore[import-not-found]  # noqa: E402

PY = '''import functools


class Context:
    """The context is a special internal object that holds state.

    It spans many lines, more than the chunk that holds the class head,
    so a cut made inside the chunk alone would leave these lines unquoted.
    """

    depth = 0

    def only_doc(self):
        """A method whose whole body is its docstring."""

    @functools.cache
    def decorated(self, x):
        """Doubles x.

        Longer text.
        """
        return x * 2
'''

JS = """const a = 1;

/**
 * Makes a draft of the base state.
 * @param base the state
 */
export function produce(base) {
  return base;
}

// Counts the keys.
// Ignores symbols.
function count(o) { return Object.keys(o).length; }
"""


def _gold(path: str, rows: list[str], marker: str, end_marker: str, doc: str) -> SimpleNamespace:
    start = next(i for i, r in enumerate(rows) if marker in r)
    end = next(i for i, r in enumerate(rows) if i >= start and end_marker in r)
    return SimpleNamespace(path=path, start_line=start, end_line=end, doc=doc)


def test_python_docstrings_go_and_the_file_still_parses(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "mod.py").write_text(PY, encoding="utf-8")
    rows = PY.split("\n")
    golds = [
        # The class chunk ends inside its docstring (a head chunk of a long class).
        _gold("mod.py", rows, "class Context", "It spans", "The context is a special internal object"),
        _gold(
            "mod.py", rows, "def only_doc", "A method whose", "A method whose whole body is its docstring."
        ),
        _gold("mod.py", rows, "@functools.cache", "return x * 2", "Doubles x.\n\nLonger text."),
    ]
    root, spans = hidden_copy(src, golds, tmp_path / "copy")
    text = (root / "mod.py").read_text(encoding="utf-8")
    tree = ast.parse(text)  # raises if the copy is not valid Python
    assert "special internal object" not in text and "It spans many lines" not in text
    assert "Doubles x" not in text and "Longer text" not in text
    assert ast.get_docstring(next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))) is None
    new_rows = text.split("\n")
    assert set(spans) == {0, 1, 2}
    _path, first, _last = spans[0]
    assert new_rows[first].startswith("class Context")
    _path, first, last = spans[1]
    assert new_rows[first].strip() == "def only_doc(self):" and new_rows[last].strip() == "pass"
    _path, first, last = spans[2]
    assert new_rows[first].strip() == "@functools.cache" and new_rows[last].strip() == "return x * 2"
    # The source tree itself is untouched.
    assert (src / "mod.py").read_text(encoding="utf-8") == PY


def test_doc_comment_blocks_go_whole(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "index.js").write_text(JS, encoding="utf-8")
    rows = JS.split("\n")
    golds = [
        _gold(
            "index.js", rows, "/**", "return base", "Makes a draft of the base state.\n@param base the state"
        ),
        _gold("index.js", rows, "// Counts", "function count", "Counts the keys.\nIgnores symbols."),
    ]
    root, spans = hidden_copy(src, golds, tmp_path / "copy")
    text = (root / "index.js").read_text(encoding="utf-8")
    assert "/**" not in text and "*/" not in text and "Makes a draft" not in text
    assert "Counts the keys" not in text and "Ignores symbols" not in text
    new_rows = text.split("\n")
    _path, first, last = spans[0]
    assert new_rows[first].startswith("export function produce") and new_rows[last] == "  return base;"
    _path, first, _last = spans[1]
    assert new_rows[first].startswith("function count")
