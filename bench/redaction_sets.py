"""Labelled redaction sets for bench_redact.py, read in their own record formats.

- the generator set (bench/secretgen.py, fixed seed): written by the rule authors;
- the independent sets (bench/redaction-sets/independent-*.jsonl, format in
  bench/redaction-sets/FORMAT.md): written by someone who never read our rules.
  Each record has a path, a text, and every secret value that must be fully
  absent from the redacted output (or `hard_negative`: nothing may change).

Both become `Record`s: a text, its file path, and the labelled secrets (spans
found from the values), so one scorer serves every set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import secretgen

HERE = Path(__file__).resolve().parent
SETS = HERE / "redaction-sets"
DEV = SETS / "independent-dev.jsonl"
HOLDOUT = SETS / "independent-holdout.jsonl"
# A third set (stop 51), a fourth (stop 53), a fifth (stop 54), a sixth (stop 55), a seventh (stop 56)
# and an eighth (stop 57), each by another helper who read neither the rules nor the earlier sets: the
# rules were tuned on their even ids; their odd ids are held out (README.md there).
THIRD = SETS / "independent-holdout-3.jsonl"
FOURTH = SETS / "independent-holdout-4.jsonl"
FIFTH = SETS / "independent-holdout-5.jsonl"
SIXTH = SETS / "independent-holdout-6.jsonl"
SEVENTH = SETS / "independent-holdout-7.jsonl"
EIGHTH = SETS / "independent-holdout-8.jsonl"


def halves() -> dict[str, list[Record]]:
    """The third to eighth sets as `independent-N-tuned` (even ids) and `independent-N-holdout` (odd ids)."""
    out: dict[str, list[Record]] = {}
    for n, path in ((3, THIRD), (4, FOURTH), (5, FIFTH), (6, SIXTH), (7, SEVENTH), (8, EIGHTH)):
        if not path.exists():
            continue
        records = load_jsonl(path)
        out[f"independent-{n}-tuned"] = [r for r in records if not int(r.id.rsplit("-", 1)[1]) % 2]
        out[f"independent-{n}-holdout"] = [r for r in records if int(r.id.rsplit("-", 1)[1]) % 2]
    return out


@dataclass(frozen=True)
class Secret:
    value: str
    kind: str
    neutral: bool
    spans: tuple[tuple[int, int], ...]  # every occurrence of the value in the record's text


@dataclass(frozen=True)
class Record:
    id: str
    path: str
    syntax: str
    text: str
    secrets: tuple[Secret, ...] = ()
    negative_kind: str = ""  # set on hard negatives (no secret at all)
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def hard_negative(self) -> bool:
        return not self.secrets


def _occurrences(text: str, value: str) -> tuple[tuple[int, int], ...]:
    spans = []
    pos = text.find(value)
    while pos != -1 and value:
        spans.append((pos, pos + len(value)))
        pos = text.find(value, pos + 1)
    return tuple(spans)


def load_jsonl(path: Path) -> list[Record]:
    """Records of an independent set (see FORMAT.md); hard negatives keep their `negative_kind`."""
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            raw = json.loads(line)
            text = raw["text"]
            secrets = tuple(
                Secret(s["value"], s["kind"], bool(s.get("neutral_name")), _occurrences(text, s["value"]))
                for s in raw.get("secrets", [])
            )
            if raw.get("hard_negative"):
                secrets = ()
            out.append(
                Record(
                    raw["id"],
                    raw.get("path", ""),
                    raw.get("syntax", ""),
                    text,
                    secrets,
                    raw.get("negative_kind", "") if raw.get("hard_negative") else "",
                )
            )
    return out


def generator_records() -> tuple[list[Record], list[Record]]:
    """(positives + held-out generator cases, hard negatives) from secretgen."""
    positives = []
    for i, case in enumerate(secretgen.positives() + secretgen.heldout()):
        secret = Secret(case.secret, case.kind, case.naming == "neutral", ((case.start, case.end),))
        positives.append(Record(f"gen-{i:04d}", case.filename, case.syntax, case.text, (secret,)))
    negatives = [
        Record(f"gen-neg-{i:04d}", c.filename, c.syntax, c.text, (), c.kind)
        for i, c in enumerate(secretgen.negatives())
    ]
    return positives, negatives
