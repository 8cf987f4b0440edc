"""Putting secrets back, locally: the model saw `[REDACTED:...]`, the user's file never gets one.

A refactor's answer is code written against the redacted selection. Each
placeholder the model kept is replaced by the original text it stood for
(the mapping lives in this process only). A placeholder that the model
dropped, invented or garbled cannot be put back safely, so the lines involved
are taken from the original selection instead, and a note says which.
Completions get the same treatment, more simply: known placeholders are
restored and a suggestion is cut before anything that only looks like one.

A secret is put back only into the file it came from (`foreign`), and only where codectx would
still find it. Some are found by where they sit
(`db_password = "Parsnipcrumble"`: letters only, a secret by its name); a model that moves the
placeholder (`WELCOME = "[REDACTED:...]"`, into a tuple, into another file) would have the value
written where no rule sees it, and the next request would send it in cleartext.
`unprotected` finds such values: each occurrence on an edited line is redacted with the lines a
request would scan around it, alone, and one that still shows would leave. Refactors then keep
the lines of the file that held it; applied code blocks keep the placeholder there, with a
warning (the one case where a file gets a placeholder: the user sees it in the diff); completions
are cut before it.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Callable, Collection, Iterable, Sequence

from codectx.privacy.pieces import MARGIN_LINES, Placeholders

_TOKEN = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{8}\]")
# Anything the model may have made of a placeholder: a truncated or re-cased token, the bare word.
_GARBLED = re.compile(r"REDACTED", re.IGNORECASE)


Redact = Callable[[str], str]  # text -> that text as a request would send it (redacted)


def common_ends(old: Sequence[object], new: Sequence[object]) -> tuple[int, int]:
    """(head, tail): how many items two sequences share at their start, and then at their end
    (characters of a text, lines of a file). lsp/edits.py trims a replacement with it too."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    return head, tail


def changed_lines(before: str, after: str) -> tuple[int, int]:
    """[first, end) of the lines of `after` that an edit of `before` changed (same head and tail
    lines left out); an empty range when nothing changed."""
    rows = after.split("\n")
    head, tail = common_ends(before.split("\n"), rows)
    return head, len(rows) - tail


# Why `foreign` secrets stay out, as the warnings and notes say it.
FOREIGN_WHY = (
    "codectx writes a secret back only into the file it came from (copied into another file it "
    "could be committed or shared, e.g. from a git-ignored file into a tracked one)"
)


def foreign(text: str, values: Iterable[str]) -> set[str]:
    """The `values` that `text` (the file an edit goes into) does not hold: secrets from other files.
    A secret goes back only into the file it came from; copied into another it may be committed or
    shared where its own file is not (a git-ignored local_settings.py's password in a tracked file)."""
    return {v for v in values if v.strip() and not holds(text, v)}


def holds(text: str, value: str) -> bool:
    """`text` has `value` as a whole value, not inside a longer one (`admin123` in `admin1234`)."""
    at = text.find(value)
    while at != -1:
        end = at + len(value)
        if not (at and _extends(text[at - 1], value[0])) and not (
            end < len(text) and _extends(text[end], value[-1])
        ):
            return True
        at = text.find(value, at + 1)
    return False


def _extends(neighbour: str, edge: str) -> bool:
    """The character next to a value would make it part of a longer one: both are word characters."""
    return (neighbour.isalnum() or neighbour == "_") and (edge.isalnum() or edge == "_")


def unprotected(before: str, after: str, values: Iterable[str], redact: Redact) -> set[str]:
    """The `values` (secrets an edit puts back) that a later request could send from `after`.

    Each occurrence on a line the edit changed is judged on its own, as a request would see it:
    the lines a request scans around a piece (MARGIN_LINES either side; privacy/pieces.py) are
    redacted alone, and the value must not show there. Redacting the whole edit at once would not
    do: once a value is found secret, every other occurrence in the same text is masked, so a copy
    20 lines below the original looked protected, and a request sending only the copy's lines
    sent the value."""
    wanted = {v for v in values if v.strip()}
    if not wanted:
        return set()
    first, end = changed_lines(before, after)
    rows = after.split("\n")
    starts = [0]
    for row in rows:
        starts.append(starts[-1] + len(row) + 1)
    exposed: set[str] = set()
    for value in wanted:
        at = after.find(value, starts[first]) if first < len(rows) else -1
        while at != -1 and at < starts[end]:
            line = bisect.bisect_right(starts, at) - 1
            last = line + value.count("\n")
            window = "\n".join(rows[max(0, line - MARGIN_LINES) : last + MARGIN_LINES + 1])
            if value in redact(window):
                exposed.add(value)
                break
            at = after.find(value, at + len(value))
    return exposed


def restored_values(raw: str, placeholders: Placeholders) -> dict[str, str]:
    """token -> original, for the known placeholders in a model's `raw` text."""
    return {t: placeholders.originals[t] for t in _TOKEN.findall(raw) if t in placeholders.originals}


def placeholders_between(raw: str, restored: str) -> Placeholders | None:
    """The placeholders that turned `raw` into `restored` (a stored answer, after a restart has lost
    the mapping), or None when they cannot be told apart for sure.

    The text between the tokens is the same in both, except the line breaks a multi-line value's
    token kept (`_restore_tokens` takes them back). One pass left to right, each literal found
    with `str.find` (a regex of lazy groups backtracked exponentially on a model's answer), and
    the result checked by restoring `raw` with it."""
    parts = _TOKEN.split(raw)
    tokens = _TOKEN.findall(raw)
    found = Placeholders()
    if not tokens:
        return found
    if not restored.startswith(parts[0]):
        return None
    pos = len(parts[0])
    for i, token in enumerate(tokens):
        literal = parts[i + 1]
        last = i == len(tokens) - 1
        breaks = len(literal) - len(literal.lstrip("\n"))
        for k in range(breaks + 1):
            rest = literal[k:]
            if last:
                end = len(restored) - len(rest) if restored.endswith(rest) else -1
            elif not rest:
                return None  # two tokens with only line breaks between: ambiguous
            else:
                end = restored.find(rest, pos)
            if end >= pos and restored.count("\n", pos, end) >= k:
                break
        else:
            return None
        found.add(token, restored[pos:end])
        pos = end + len(rest)
    if _restore_tokens(raw, found) != restored:
        return None
    return Placeholders({t: o for t, o in found.originals.items() if o != t})


def restore_completion(
    text: str, placeholders: Placeholders, guard: Callable[[str], Collection[str]] | None = None
) -> str:
    """A completion with known placeholders restored, cut before an unknown or garbled one, and
    before one whose secret `guard` (restored completion -> unprotected values) says would leave."""
    if not _GARBLED.search(text):
        return text
    for m in _TOKEN.finditer(text):
        if m.group(0) not in placeholders.originals:
            return _restore_tokens(_cut_before(text, m.start()), placeholders)
    if guard is not None:
        exposed = guard(_restore_tokens(text, placeholders))
        for m in _TOKEN.finditer(text):
            if placeholders.originals[m.group(0)] in exposed:
                return _restore_tokens(_cut_before(text, m.start()), placeholders)
    rest = _TOKEN.sub("", text)
    if _GARBLED.search(rest):
        return _restore_tokens(_cut_before(text, _first_garbled(text, placeholders)), placeholders)
    return _restore_tokens(text, placeholders)


def _first_garbled(text: str, placeholders: Placeholders) -> int:
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    for m in _GARBLED.finditer(text):
        if not any(s <= m.start() < e for s, e in spans):
            return m.start()
    return len(text)


def _cut_before(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    return text[:line_start].rstrip("\n") if line_start else ""


def restore_prose(text: str, placeholders: Placeholders) -> str:
    """An explanation with each known placeholder replaced by its original text (shown locally)."""
    if "[REDACTED:" not in text:
        return text
    return _restore_tokens(text, placeholders)


def restore_edit(
    code: str, sent: str, original: str, placeholders: Placeholders, refused: Collection[str] = ()
) -> tuple[str, list[str]]:
    """(the edit with placeholders restored, notes on what could not be restored and what was kept).

    `sent` is the selection as the model saw it, `original` the same selection in the file; they
    have the same lines (a token keeps the line breaks of what it replaced). `refused` tokens are
    not put back (`unprotected` said their secret would leave from where the model put them): an
    answer row holding one is handled as a garbled one, and selection lines holding one are kept.
    """
    if refused:
        placeholders = Placeholders({t: o for t, o in placeholders.originals.items() if t not in refused})
    sent_lines = sent.split("\n")
    orig_lines = original.split("\n")
    if len(sent_lines) != len(orig_lines):
        orig_lines = sent_lines = []  # cannot align: nothing can be kept from the original
    rows = code.split("\n")
    bad = [_row_is_bad(row, placeholders) for row in rows]
    sent_tokens = _token_counts(sent, placeholders)
    answer_tokens = _token_counts(code, placeholders)
    dropped = {t for t, n in sent_tokens.items() if answer_tokens.get(t, 0) < n} | {
        t for t in refused if t in sent
    }
    notes: list[str] = []
    if not any(bad) and not dropped:
        return _restore_tokens(code, placeholders), notes
    matcher = difflib.SequenceMatcher(None, sent_lines, rows, autojunk=False)
    to_answer: dict[int, int] = {}  # sent line -> answer line
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("equal", "replace"):
            for k in range(min(i2 - i1, j2 - j1)):
                to_answer[i1 + k] = j1 + k
    to_sent = {j: i for i, j in to_answer.items()}
    out = list(rows)
    # A bad answer row gets its aligned line of the original back; one that aligns with none goes.
    bad_rows = [j for j, is_bad in enumerate(bad) if is_bad]
    back = {j: to_sent[j] for j in bad_rows if j in to_sent}
    for j, i in back.items():
        out[j] = orig_lines[i]
    kept = set(back.values())
    removed = {j for j in bad_rows if j not in back}
    inserted: dict[int, list[str]] = {}
    for i, line in enumerate(sent_lines):
        if i in kept or not any(t in line for t in dropped):
            continue
        target = to_answer.get(i)
        if target is not None:
            out[target] = orig_lines[i]
            removed.discard(target)
        else:
            at = _insert_point(matcher, i, len(rows))
            inserted.setdefault(at, []).append(orig_lines[i])
        kept.add(i)
    final: list[str] = []
    for j, row in enumerate(out):
        final.extend(inserted.pop(j, []))
        if j in removed:
            continue
        final.append(row)
    for rest in inserted.values():
        final.extend(rest)
    if kept:
        shown = ", ".join(str(i + 1) for i in sorted(kept))
        notes.append(
            f"the model dropped or changed a redacted secret; line(s) {shown} of the selection were kept "
            "as they are in the file"
        )
    if refused:
        notes.append(
            "the model moved a redacted secret where codectx would not recognise it as one (it would "
            "be sent in cleartext next time); it was not put there"
        )
    if removed:
        notes.append(
            f"{len(removed)} line(s) of the answer held a placeholder that matches no secret; "
            "they were left out"
        )
    return _restore_tokens("\n".join(final), placeholders), notes


def _row_is_bad(row: str, placeholders: Placeholders) -> bool:
    """The row holds something that looks like a placeholder but is not one we made."""
    if not _GARBLED.search(row):
        return False
    rest = _TOKEN.sub(lambda m: "" if m.group(0) in placeholders.originals else "REDACTED", row)
    return bool(_GARBLED.search(rest))


def _token_counts(text: str, placeholders: Placeholders) -> dict[str, int]:
    counts: dict[str, int] = {}
    for token in _TOKEN.findall(text):
        if token in placeholders.originals:
            counts[token] = counts.get(token, 0) + 1
    return counts


_TOKEN_LINES = re.compile(r"(\[REDACTED:[a-z0-9-]+:[0-9a-f]{8}\])(\n*)")


def _restore_tokens(text: str, placeholders: Placeholders) -> str:
    """Known tokens replaced; a multi-line original takes the place of the blank lines its token kept."""

    def put_back(m: re.Match[str]) -> str:
        original = placeholders.originals.get(m.group(1))
        if original is None:
            return m.group(0)
        breaks = m.group(2)
        return original + breaks[min(len(breaks), original.count("\n")) :]

    return _TOKEN_LINES.sub(put_back, text)


def _insert_point(matcher: difflib.SequenceMatcher[str], i: int, end: int) -> int:
    """Where in the answer a deleted sent line `i` would have been."""
    for _op, i1, i2, j1, j2 in matcher.get_opcodes():
        if i1 <= i < i2:
            return min(j2, j1 + (i - i1))  # after the block's lines it lines up with
    return end
