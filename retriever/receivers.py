"""What the rest of the workspace calls on a receiver name: likely next calls on `ctx.`, `app.`, `flask.`.

Before the user types the member's name, the receivers in scope (`ctx`,
`self.app`, a module such as `flask`) say a lot: across the workspace, code
writes `ctx.get_parameter_source(...)`, `formatter.write_usage(...)`,
`flask.abort(...)`. Every file's references (attribute chains recorded by the
indexer) are counted once per index version into receiver -> member counts,
per file, so that the file being edited can be left out of its own evidence
(its indexed version may already hold the code being written).

The owner class of a receiver is inferred from the members called on it: the
class that defines most of them (`ctx` -> `Context`), so a common member name
(`get`, `update`) resolves to that class's method first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codectx.indexer.model import Definition
from codectx.retriever.definitions import SELF_NAMES, split_chain

MAX_MEMBERS = 12  # most-used members per receiver
MIN_USES = 1
CACHE_SIZE = 50_000


@dataclass(frozen=True)
class MemberUse:
    receiver: str
    member: str
    share: float  # this member's share of the receiver's uses outside the current file


class ReceiverCalls:
    """Receiver name -> member name -> uses, in total and per file (updated per changed file)."""

    @classmethod
    def of_files(cls, chains: Mapping[str, Sequence[str]]) -> ReceiverCalls:
        """Counted from each file's attribute chains (`IndexReader.reference_chains`)."""
        calls = cls()
        for path, used in chains.items():
            calls.set_file(path, used)
        return calls

    def __init__(self) -> None:
        self.total: dict[str, Counter[str]] = {}
        self.per_file: dict[str, dict[str, Counter[str]]] = {}
        # Owner classes and picked definitions, reused across requests (common member names have
        # thousands of definitions); cleared whenever a file's counts change.
        self._owners: dict[tuple[str, ...], str] = {}
        self._picks: dict[tuple[str, str], Definition | None] = {}
        self._members: dict[tuple[str, str, int], list[MemberUse]] = {}

    def owner(self, members: Sequence[str], named: Any) -> str:
        key = tuple(members)
        found = self._owners.get(key)
        if found is None:
            if len(self._owners) > CACHE_SIZE:
                self._owners.clear()
            found = self._owners[key] = owner_of(members, named)
        return found

    def pick(self, member: str, owner: str, named: Any) -> Definition | None:
        key = (member, owner)
        if key not in self._picks:
            if len(self._picks) > CACHE_SIZE:
                self._picks.clear()
            self._picks[key] = pick(named(member), owner)
        return self._picks[key]

    @staticmethod
    def count(chains: Iterable[str]) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for chain in chains:
            parts = split_chain(chain)
            if len(parts) < 2:
                continue
            out.setdefault(parts[-2], Counter())[parts[-1]] += 1
        return out

    def set_file(self, path: str, chains: Iterable[str]) -> None:
        self.drop_file(path)
        self._owners.clear()
        self._picks.clear()
        self._members.clear()
        counts = self.count(chains)
        if not counts:
            return
        self.per_file[path] = counts
        for receiver, members in counts.items():
            self.total.setdefault(receiver, Counter()).update(members)

    def drop_file(self, path: str) -> None:
        old = self.per_file.pop(path, None)
        if old:
            self._owners.clear()
            self._picks.clear()
            self._members.clear()
        for receiver, members in (old or {}).items():
            total = self.total.get(receiver)
            if total is None:
                continue
            total.subtract(members)
            for name in [n for n, c in total.items() if c <= 0]:
                del total[name]
            if not total:
                del self.total[receiver]

    def members(self, receiver: str, exclude_path: str, top: int = MAX_MEMBERS) -> list[MemberUse]:
        """The members most used on `receiver` in files other than `exclude_path`, most used first."""
        key = (receiver, exclude_path, top)
        found = self._members.get(key)
        if found is None:
            if len(self._members) > CACHE_SIZE:
                self._members.clear()
            found = self._members[key] = self._count_members(receiver, exclude_path, top)
        return found

    def _count_members(self, receiver: str, exclude_path: str, top: int) -> list[MemberUse]:
        total = self.total.get(receiver)
        if not total:
            return []
        own = self.per_file.get(exclude_path, {}).get(receiver)
        counts = total - own if own else total
        n = sum(counts.values())
        ranked = sorted(((c, m) for m, c in counts.items() if c >= MIN_USES), key=lambda x: (-x[0], x[1]))
        return [MemberUse(receiver, m, c / n) for c, m in ranked[:top]]


def receivers_in(names: Sequence[str]) -> list[str]:
    """Receivers in the scope, first-use order: every part of a chain before its last, and plain
    names (a parameter such as `ctx` may be passed on before it is called on)."""
    found: dict[str, None] = {}
    for name in names:
        parts = split_chain(name)
        for part in parts[:-1] if len(parts) > 1 else parts:
            if part not in SELF_NAMES:
                found.setdefault(part, None)
    return list(found)


def owner_of(members: Sequence[str], named: Any) -> str:
    """The class defining most of `members` (qualname prefix), or "" when none defines two."""
    votes: Counter[str] = Counter()
    for member in members:
        owners = {d.qualname.rsplit(".", 1)[0] for d in named(member) if "." in d.qualname}
        votes.update(owners)
    if not votes:
        return ""
    owner, count = min(votes.items(), key=lambda x: (-x[1], x[0]))
    return owner if count >= 2 else ""


def pick(defs: Sequence[Definition], owner: str) -> Definition | None:
    """The definition of a member on the inferred owner class, else the only method of that name."""
    if owner:
        for d in defs:
            if d.qualname.rsplit(".", 1)[0] == owner:
                return d
    methods = [d for d in defs if "." in d.qualname]
    return methods[0] if len(methods) == 1 else None
