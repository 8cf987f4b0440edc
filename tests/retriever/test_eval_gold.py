"""`codectx eval` leaves out call sites whose gold answer would be a guess (retriever/evalgold.py)."""

from __future__ import annotations

from pathlib import Path

from codectx.indexer.model import Definition, Import
from codectx.retriever.eval import code_tasks
from codectx.retriever.evalgold import doubtful_gold

from tests.support.indexes import build_index, copy_repo


def _def(qualname: str, kind: str = "function", language: str = "python") -> Definition:
    return Definition(qualname.rsplit(".", 1)[-1], qualname, kind, "lib/x.py", language, 0, 3)


WORKSPACE = (Import("app.util", (("helper", ""),), resolved="app/util.py"),)
LIBRARY = (Import("pprint", (("pformat", ""),)), Import("os"))


def test_bare_calls_of_methods_builtins_and_library_names_are_doubtful() -> None:
    assert doubtful_gold("set_lineno", _def("Node.set_lineno", "method"), "python", WORKSPACE)
    assert doubtful_gold("inner", _def("outer.inner"), "python", WORKSPACE)
    assert doubtful_gold("next", _def("next"), "python", WORKSPACE)
    assert doubtful_gold("pformat", _def("pformat"), "python", LIBRARY)
    assert doubtful_gold("os.walk", _def("walk"), "python", LIBRARY)
    # A workspace function of a builtin's name, imported by the file, is what the call reaches.
    rebinds = (Import("app.fmt", (("format", ""),), resolved="app/fmt.py"),)
    assert doubtful_gold("format", _def("format"), "python", rebinds) == ""
    assert doubtful_gold("helper", _def("helper"), "python", WORKSPACE) == ""


def test_standard_type_method_names_need_a_known_receiver() -> None:
    extend = _def("Environment.extend", "method")
    lines = ["def f(env):", "    values = []", "    values.extend(x)"]
    assert doubtful_gold("values.extend", extend, "python", WORKSPACE, lines, 2)
    assert doubtful_gold("self._queue.extend", extend, "python", WORKSPACE, lines, 2)
    typed = ["def f():", "    env = Environment()", "    env.extend(x)"]
    assert doubtful_gold("env.extend", extend, "python", WORKSPACE, typed, 2) == ""
    assert doubtful_gold("self.extend", extend, "python", WORKSPACE, lines, 2) == ""
    # Not a standard type's method: the call is kept whatever the receiver.
    assert (
        doubtful_gold(
            "values.compile_expression",
            _def("Environment.compile_expression", "method"),
            "python",
            WORKSPACE,
            lines,
            2,
        )
        == ""
    )


def test_javascript_globals_and_prototype_methods() -> None:
    stringify = _def("stringify", language="javascript")
    assert doubtful_gold("JSON.stringify", stringify, "javascript", ())
    assert doubtful_gold("token.trim", _def("trim", language="javascript"), "javascript", ())
    utils = (Import("./utils.js", (("default", "utils"),), resolved="lib/utils.js"),)
    assert doubtful_gold("utils.trim", _def("trim", language="javascript"), "javascript", utils) == ""
    assert doubtful_gold("utils.isArray", _def("isArray", language="javascript"), "javascript", ()) == ""


def test_code_tasks_leave_doubtful_call_sites_out(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    (root / "app" / "calls.py").write_text(
        "from pprint import pformat\n\nfrom app.shapes import Shape, area\n\n\n"
        "def run(items):\n"
        "    out = []\n"
        "    out.append(area(items))\n"
        "    shape = Shape()\n"
        "    shape.resize(2)\n"
        "    shape.clear()\n"
        "    grow(1)\n"
        "    return pformat(out), next(items)\n"
    )
    (root / "app" / "shapes.py").write_text(
        "class Shape:\n"
        "    def resize(self, n):\n        return n\n\n"
        "    def clear(self):\n        return None\n\n"
        "    def grow(self, n):\n        return n\n\n"
        "    def append(self, x):\n        return x\n\n"
        "    def next(self):\n        return 1\n\n\n"
        "def area(items):\n    return len(items)\n\n\n"
        "def pformat(x):\n    return str(x)\n"
    )
    _settings, store = build_index(root)
    callees = {t.callee for t in code_tasks(store, root, limit=500, seed=0) if t.path == "app/calls.py"}
    assert {"area", "resize", "clear"} <= callees  # `shape = Shape()` in view: clear() is Shape's
    assert "append" not in callees  # `out = []`: a list's append, not Shape.append
    assert "grow" not in callees  # a bare call never reaches a method
    assert "pformat" not in callees  # bound by the library import
    assert "next" not in callees  # the builtin


def test_a_standard_method_on_an_unnamed_receiver_is_doubtful() -> None:
    test = _def("test", language="javascript")
    row = "  return /^is[A-Z]/.test(prop);"
    column = row.index("test(")
    # The indexed chain of `/re/.test(` is the bare name: the row shows it is an attribute.
    assert doubtful_gold("test", test, "javascript", (), [row], 0, column)
    decode = _def("decode")
    row = "name = line.split(b'=')[0].strip().decode()"
    assert doubtful_gold("decode", decode, "python", WORKSPACE, [row], 0, row.index("decode("))
    # A bare call of the same name, or a name no standard type has, is kept.
    assert doubtful_gold("test", test, "javascript", (), ["  test(prop);"], 0, 2) == ""
    row = "  return build().render(prop);"
    render = _def("render", language="javascript")
    assert doubtful_gold("render", render, "javascript", (), [row], 0, row.index("render(")) == ""


def test_a_spread_is_not_an_attribute() -> None:
    keys = _def("keys", language="javascript")
    row = "  return [...keys(obj)];"
    # `...keys(` calls the bare name (a spread), whose only definition is the gold.
    assert doubtful_gold("keys", keys, "javascript", (), [row], 0, row.index("keys(")) == ""
    row = "  return obj?.keys(x);"
    assert doubtful_gold("keys", keys, "javascript", (), [row], 0, row.index("keys("))
