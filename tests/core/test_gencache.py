"""The generated-code cache (codectx/gencache.py): code compiled once is loaded, not compiled, by the
next process; what it loads behaves as compiled code would; a damaged file is ignored."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

from codectx.gencache import GeneratedCodeCache

FUTURE = 0x1000000  # __future__.annotations.compiler_flag


def _run(cache: GeneratedCodeCache, source: str, flags: int = 0) -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(cache.compile(source, "<test>", "exec", flags), namespace)
    return namespace


def test_a_second_cache_on_the_same_file_loads_what_the_first_compiled(tmp_path: Path) -> None:
    path = tmp_path / "codes.marshal"
    first = GeneratedCodeCache(path)
    assert _run(first, "def f(x):\n    return x * 3\n")["f"](2) == 6  # type: ignore[operator]
    assert first.compiled == 1
    assert first.save() and path.exists()
    assert not first.save()  # nothing new since: the file is not rewritten

    second = GeneratedCodeCache(path)
    assert _run(second, "def f(x):\n    return x * 3\n")["f"](5) == 15  # type: ignore[operator]
    assert second.compiled == 0  # loaded from the file
    _run(second, "def g():\n    return 1\n")
    assert second.compiled == 1  # another source misses
    second.save()
    assert len(GeneratedCodeCache(path).loaded) == 2  # what this process used, both sources

    third = GeneratedCodeCache(path)  # uses one of the two and compiles a third source
    _run(third, "def g():\n    return 1\n")
    _run(third, "y = 2\n")
    third.save()
    assert len(GeneratedCodeCache(path).loaded) == 3  # what it loaded but did not use is kept


def test_stale_entries_do_not_pile_up(tmp_path: Path) -> None:
    path = tmp_path / "codes.marshal"
    for run in range(6):  # each run compiles one source never seen again, and uses nothing else
        cache = GeneratedCodeCache(path)
        _run(cache, f"value = {run}\n")
        cache.save()
    assert len(GeneratedCodeCache(path).loaded) <= 3


def test_the_future_flags_are_part_of_the_key_and_of_the_compile(tmp_path: Path) -> None:
    cache = GeneratedCodeCache(tmp_path / "codes.marshal")
    source = "def f(x: int) -> None:\n    pass\n"
    lazy = _run(cache, source, FUTURE)["f"]
    eager = _run(cache, source, 0)["f"]
    assert lazy.__annotations__ == {"x": "int", "return": "None"}  # type: ignore[attr-defined]
    assert eager.__annotations__ == {"x": int, "return": None}  # type: ignore[attr-defined]
    assert cache.compiled == 2

    # The stand-in for a module with `from __future__ import annotations` compiles as that module would.
    compile_like_attrs = cache.compiler(FUTURE)
    namespace: dict[str, object] = {}
    exec(compile_like_attrs(source, "<attrs generated>", "exec"), namespace)
    assert namespace["f"].__annotations__ == {"x": "int", "return": "None"}  # type: ignore[attr-defined]


def test_a_damaged_or_foreign_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "codes.marshal"
    for content in (b"\x00garbage", marshal.dumps(["not", "a", "dict"]), marshal.dumps({b"k": "not code"})):
        path.write_bytes(content)
        cache = GeneratedCodeCache(path)
        assert cache.loaded == {}
        assert _run(cache, "x = 41 + 1\n")["x"] == 42
        assert cache.save()
        assert len(GeneratedCodeCache(path).loaded) == 1


def test_a_cache_folder_that_cannot_be_written_loses_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be", encoding="utf-8")
    cache = GeneratedCodeCache(blocker / "codes.marshal")
    assert _run(cache, "x = 1\n")["x"] == 1
    assert not cache.save()  # reported in the log, never raised: the next start compiles again


PROBE = r"""
import json, sys
from pathlib import Path
from codectx.gencache import cache_generated_code
cache = cache_generated_code(Path(sys.argv[1]))
import lsprotocol.types as t
from lsprotocol.converters import get_converter
converter = get_converter()
asked = {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 1, "character": 2}}
message = converter.structure(asked, t.CompletionParams)
print(json.dumps({"compiled": cache.compiled, "used": len(cache.used),
                  "line": message.position.line, "again": converter.unstructure(message)}))
"""


def test_the_language_servers_imports_compile_once_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "generated.marshal"

    def probe() -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=300, check=True
        )
        result: dict[str, object] = json.loads(done.stdout)
        return result

    first = probe()  # saved at exit
    assert first["compiled"] > 500 and path.exists(), first  # type: ignore[operator]
    second = probe()
    # All but the few scripts whose text embeds a per-process str hash come from the file.
    assert second["compiled"] < 0.02 * second["used"], second  # type: ignore[operator]
    assert second["line"] == first["line"] == 1
    assert (
        second["again"]
        == first["again"]
        == {
            "textDocument": {"uri": "file:///a.py"},
            "position": {"line": 1, "character": 2},
        }
    )
