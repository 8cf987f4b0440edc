"""Discovery's verdict on named paths: the files an editor saved, checked without a whole walk.

Each path is judged by the same `Walker` rules as a walk (walk/discovery.py): the ignore files
along the path, the default skips, the never-index list, symlinks. Ignored files are listed
with reason "ignored" (a walk leaves them out silently), paths outside the workspace get
"outside-root", missing ones "missing".
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable
from pathlib import Path

from codectx.indexer.walk.discovery import Discovery, DiscoveryError, Walker, _norm, undecodable
from codectx.indexer.walk.ignorefiles import IgnoreRules

from codectx.settings import Settings


def check_paths(root: Path, settings: Settings, paths: Iterable[str]) -> Discovery:
    """Discovery's verdict on a few workspace-relative paths, without walking the whole tree.

    For re-indexing files an editor saved: the same rules as `discover` (ignore files along
    each path, default skips, never-index list, symlinks), and ignored files are listed with
    reason "ignored". Paths outside the workspace get "outside-root", missing ones "missing".
    """
    real_root = Path(os.path.realpath(root))
    if not real_root.is_dir():
        raise DiscoveryError(f"workspace is not a folder: {root}")
    walker = Walker(real_root, settings)
    walker.report_ignored = True
    rules_at: dict[str, IgnoreRules] = {"": walker.rules_for(str(real_root), "", walker.base_rules())}
    for raw in paths:
        rel = _norm(raw)
        if not rel or posixpath.normpath(rel).startswith(".."):
            walker.skip(raw, "outside-root")
            continue
        if undecodable(rel):
            walker.skip_undecodable(rel)
            continue
        rel = posixpath.normpath(rel)
        parts = rel.split("/")
        rules = rules_at[""]
        blocked = False
        for i, name in enumerate(parts[:-1]):
            folder = "/".join(parts[: i + 1])
            real = real_root / folder
            if (
                name in (".git", ".codectx")
                or walker.skipped_folder(name, str(real))
                or (real / "pyvenv.cfg").exists()
                or rules.ignored(folder, True)
            ):
                blocked = True
                break
            if folder not in rules_at:
                rules_at[folder] = walker.rules_for(str(real), folder, rules)
            rules = rules_at[folder]
        if blocked:
            walker.skip(rel, "ignored")
            continue
        path = real_root / rel
        real_path = os.path.realpath(path)
        if not walker.inside_root(real_path):
            walker.skip(rel, "symlink-outside-root")
            continue
        if walker.secret_target(real_path, rel):
            walker.skip(rel, "secret-file")
            continue
        try:
            st = os.stat(path)
        except FileNotFoundError:
            walker.skip(rel, "missing")
            continue
        except OSError:
            walker.skip(rel, "unreadable")
            continue
        if not stat.S_ISREG(st.st_mode):
            walker.skip(rel, "not-a-file")
            continue
        walker._file(parts[-1], rel, str(path), st, rules)
    return walker.out
