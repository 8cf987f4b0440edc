"""The working tree's changes for @diff, read from git without running anything the repository says.

A workspace is untrusted input, its `.git/config` too: `core.fsmonitor`, a filter driver's `clean`
or `process` command and a diff driver's `textconv` are commands git runs on `git diff` (red team 3
had one print a file from outside the workspace into the diff that was sent). So git is asked with
those switched off: `--no-ext-diff --no-textconv`, an empty `core.fsmonitor`, and every filter
driver the configuration names emptied; the prefixes, renames and relative paths are fixed on the
command line, whatever the configuration says, so the paths read from the diff are the real ones,
relative to the workspace (which may be a folder inside the repository).
A deleted file's lines are not shown (`--irreversible-delete`): they are not in the workspace.

`head_texts` reads files as they are in HEAD (`git cat-file --batch`, no filters), so that the
lines of a hunk can be judged with the file around them, as a request judges a piece.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

DIFF_BYTES = 200_000  # of the diff sent at most (a turn's budget cuts it further)
HEAD_BYTES = 5_000_000  # a file's HEAD version read to judge its hunks (as large as a document is read)
TIMEOUT_S = 20
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


class GitFailed(Exception):
    """git could not be run, or said no (not a repository, no HEAD); the message says which."""


@dataclass
class Section:
    """One file of a unified diff: its path now, its path in HEAD, the text, and the hunks'
    (first, count) line ranges (1-based, as git writes them) on each side."""

    path: str
    old_path: str
    text: str
    old_ranges: list[tuple[int, int]] = field(default_factory=list)
    new_ranges: list[tuple[int, int]] = field(default_factory=list)

    @property
    def paths(self) -> set[str]:
        return {self.path, self.old_path}

    def changed_lines(self) -> tuple[int, int]:
        """The first and last changed line now (0-based), for citations."""
        if not self.new_ranges:
            return 0, 0
        first = max(0, self.new_ranges[0][0] - 1)
        last_start, last_count = self.new_ranges[-1]
        return first, max(first, last_start + last_count - 2)


# Settings given to every git run, over the repository's own: no command of its configuration runs,
# nothing is fetched (a partial clone's missing blobs would run `core.sshCommand`), paths come
# unquoted, submodules are not entered (their own configuration would run commands).
SAFE_CONFIG = (
    ("core.fsmonitor", ""),
    ("core.hooksPath", os.devnull),
    ("core.sshCommand", ""),
    ("core.pager", "cat"),
    ("core.quotePath", "false"),
    ("diff.external", ""),
    ("diff.submodule", "short"),
    ("submodule.recurse", "false"),
    ("protocol.allow", "never"),
)


def _git(root: Path) -> tuple[list[str], dict[str, str]]:
    """git's command line and environment for `root`, with the configuration's commands switched
    off (see the module). The settings travel as GIT_CONFIG_KEY_n/VALUE_n pairs: `-c name=value`
    splits at the first `=`, and a filter driver may be named `x=y`."""
    pairs = list(SAFE_CONFIG)
    env = {
        **os.environ,
        "GIT_NO_LAZY_FETCH": "1",
        # No transport at all, whatever `protocol.<name>.allow` the repository sets (a partial
        # clone's promisor `ext::` remote ran a command where GIT_NO_LAZY_FETCH is not known).
        "GIT_ALLOW_PROTOCOL": "none",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_EXTERNAL_DIFF": "",
        "GIT_PAGER": "cat",
    }
    argv = ["git", "--no-pager", "-C", str(root)]
    drivers = _run(
        [*argv, "config", "--null", "--get-regexp", r"^filter\."], env=_with(env, pairs), ok=(0, 1)
    )
    names = set()
    for entry in drivers.split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        if key.startswith("filter.") and key.count(".") >= 2:
            names.add(key[len("filter.") : key.rindex(".")])
    for name in sorted(names):
        pairs += [(f"filter.{name}.{what}", "") for what in ("clean", "smudge", "process")]
    # And as -c options too: git before 2.31 reads no GIT_CONFIG_KEY_n. A name holding `=` cannot
    # go that way; the environment carries it on newer git.
    for key, value in pairs:
        if "=" not in key:
            argv += ["-c", f"{key}={value}"]
    return argv, _with(env, pairs)


def _with(env: dict[str, str], pairs: list[tuple[str, str]]) -> dict[str, str]:
    out = {k: v for k, v in env.items() if not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))}
    out.pop("GIT_CONFIG_PARAMETERS", None)
    out["GIT_CONFIG_COUNT"] = str(len(pairs))
    for n, (key, value) in enumerate(pairs):
        out[f"GIT_CONFIG_KEY_{n}"] = key
        out[f"GIT_CONFIG_VALUE_{n}"] = value
    return out


def working_diff(root: Path) -> str:
    """`git diff HEAD` of the working tree under `root`, paths relative to it (at most DIFF_BYTES),
    or GitFailed."""
    argv, env = _git(root)
    top = _text(_run([*argv, "rev-parse", "--show-toplevel"], env=env))
    real, top_real = Path(os.path.realpath(root)), Path(os.path.realpath(top)) if top else None
    if top_real is None or not (real == top_real or top_real in real.parents):
        raise GitFailed(f"the repository's work tree ({top}) is not this workspace or a folder above it")
    git_dir = (
        _run([*argv, "rev-parse", "--absolute-git-dir"], env=env).decode("utf-8", "surrogateescape").strip()
    )
    if not _own_git_dir(Path(os.path.realpath(git_dir)), top_real):
        raise GitFailed(f"the repository ({git_dir}) is not this workspace's: its .git points elsewhere")
    out = _run(
        [
            *argv,
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--irreversible-delete",
            "--find-renames",
            "--ignore-submodules=all",
            "--submodule=short",
            "--relative",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "HEAD",
            "--",
        ],
        env=env,
    )
    if len(out) > DIFF_BYTES:
        # Cut at a line's end: a line cut short may end inside a value, whose first part no rule
        # would know for a secret.
        out = out[: out.rfind(b"\n", 0, DIFF_BYTES) + 1]
    return out.decode("utf-8", errors="replace")


def _text(out: bytes) -> str:
    return out.decode("utf-8", "surrogateescape").strip()


def _own_git_dir(git_dir: Path, top: Path) -> bool:
    """The repository's folder belongs to the work tree: inside it, a linked worktree's folder
    (whose `gitdir` file points back here), or a submodule's under an enclosing `.git/modules`. A
    `.git` file pointing at another project's repository would show that project's files."""
    if git_dir == top / ".git" or top in git_dir.parents:
        return True
    try:
        back = (git_dir / "gitdir").read_text(encoding="utf-8").strip()
    except OSError:
        back = ""
    if back and Path(os.path.realpath(git_dir / back)) == top / ".git":  # relative: from git_dir
        return True
    parts = git_dir.parts
    if ".git" in parts and "modules" in parts:
        owner = Path(*parts[: parts.index(".git")])
        return owner in top.parents
    return False


def head_texts(root: Path, paths: list[str]) -> dict[str, str]:
    """Each path's text in HEAD (files over HEAD_BYTES, binary ones and missing ones left out)."""
    if not paths:
        return {}
    # `HEAD:./path`: relative to the workspace, which may be a folder inside the repository.
    if any("\n" in p for p in paths):
        paths = [p for p in paths if "\n" not in p]  # one request a line: such a name is left out
    request = "".join(f"HEAD:./{p}\n" for p in paths).encode("utf-8", "surrogateescape")
    argv, env = _git(root)
    out = _run([*argv, "cat-file", "--batch"], env=env, data=request)
    texts: dict[str, str] = {}
    at = 0
    for path in paths:
        nl = out.find(b"\n", at)
        if nl == -1:
            break
        head = out[at:nl].split()
        at = nl + 1
        if len(head) != 3 or not head[2].isdigit():
            continue  # "<name> missing": not in HEAD
        size = int(head[2])
        body = out[at : at + size]
        at += size + 1  # every object's body is skipped: a submodule's commit, a tree
        if head[1] == b"blob" and size <= HEAD_BYTES and b"\0" not in body[:8000]:
            texts[path] = body.decode("utf-8", errors="replace")
    return texts


def sections(text: str) -> list[Section]:
    """The files of a unified diff as git writes it with the prefixes `working_diff` fixes."""
    out = []
    for part in re.split(r"(?m)^(?=diff --git )", text):
        if not part.startswith("diff --git "):
            continue
        old = new = None
        for line in part.split("\n", 12)[:12]:
            if line.startswith("@@"):
                break  # the header ends at the first hunk: `--- a/...` below it is a removed line
            if line.startswith(("--- a/", '--- "a/')):
                old = _unquote(line[4:])[2:]
            elif line.startswith(("+++ b/", '+++ "b/')):
                new = _unquote(line[4:])[2:]
            elif line.startswith(("rename from ", "copy from ")):
                old = _unquote(line.split(" ", 2)[2])
            elif line.startswith(("rename to ", "copy to ")):
                new = _unquote(line.split(" ", 2)[2])
        if old is None or new is None:
            head = re.match(r'diff --git "?a/(.+?)"? "?b/(.+?)"?$', part.split("\n", 1)[0])
            if head is None:
                continue  # a header that does not read: nothing of it is sent
            old, new = old or head.group(1), new or head.group(2)
        section = Section(new, old, part.rstrip("\n"))
        for m in _HUNK.finditer(part):
            section.old_ranges.append((int(m.group(1)), int(m.group(2) or 1)))
            section.new_ranges.append((int(m.group(3)), int(m.group(4) or 1)))
        out.append(section)
    return out


def _unquote(path: str) -> str:
    """A path as git quotes it when it holds unusual characters ("a/t\\303\\251st.py")."""
    path = path.rstrip("\t")
    if len(path) >= 2 and path.startswith('"') and path.endswith('"'):
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return path


def _run(
    cmd: list[str], env: dict[str, str] | None = None, data: bytes | None = None, ok: tuple[int, ...] = (0,)
) -> bytes:
    try:
        done = subprocess.run(cmd, input=data, capture_output=True, timeout=TIMEOUT_S, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitFailed(f"git failed ({exc})") from exc
    if done.returncode not in ok:
        raise GitFailed(done.stderr.decode(errors="replace").strip()[:200] or "no git")
    return done.stdout
