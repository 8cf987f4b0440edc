"""Piece redaction: each part of a request is redacted with its own file type and path, before assembly.

A request is cut from documents: the prefix and suffix around a cursor, a
selection and its enclosing scope, retrieved chunks, recent edits. Scanning
the assembled prompt alone misses secrets two ways: rules that need the file
type (a bare `KEY=value` in an INI file) see no file type there, and a cut
(the cursor, a selection edge, a chunk boundary, a budget cut) leaves each side
of a secret too short for any rule. So, before the prompt is built:

- the ORIGINAL text around every cut is scanned (the whole region the pieces
  cover, a few lines either side, widened to a key block that reaches into it),
  with the piece's own path as origin;
- each secret is masked in every piece it touches, whole: the part of it that
  falls in a piece becomes one `[REDACTED:<rule>:<hmac8>]` token;
- on the cursor's line, what is being typed is probed as if it were finished:
  an unclosed string is closed, and a token run at the cursor is lengthened
  with filler, so a provider token or a quoted password whose end is not
  typed yet is masked from its first character;
- a value found secret in one piece is masked wherever else it appears in the
  same request.

The whole-prompt scan in the egress gate stays as the second line of defence.
Every token and the original text it replaced are kept in `placeholders`
(this process only, never sent or stored), so an edit the model returns can
have its placeholders put back locally (`restore`).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from codectx.privacy import filters, sqlrows, tables
from codectx.privacy.keys import tag
from codectx.privacy.redact import ECHO_MIN_CHARS, TOKEN_PREFIX, Finding, Redactor

# Between two literals of a value joined from several (`" + "`, `" . "`, `"\n    "`).
_JOINT = re.compile(r"[\"'][^\"'\w]*[\"']")
_WORDS_PREFIX = re.compile(r"[A-Za-z]+(?:[-_][A-Za-z]+)*[-_]?\Z")  # `sk-proj-`, `xoxb-`: a format's prefix


def _own_part(part: str) -> bool:
    """A part of a joined secret worth masking wherever it recurs: long enough, and not a public
    prefix (`sk-proj-`) or a URL's fixed head (`https://hooks.slack.com/services/`), which every
    such value shares."""
    return len(part) >= ECHO_MIN_CHARS and "://" not in part and not _WORDS_PREFIX.match(part)


MARGIN_LINES = 6  # lines scanned beyond a region's edges (rules look at most 4 lines around a value)
KEY_BLOCK_REACH = 64 * 1024  # how far a BEGIN ... PRIVATE KEY line may sit before a region and widen it
PROBE_MIN_CHARS = 6  # a token run at the cursor shorter than this gives too little away to probe
# Fillers that finish a partly typed value: mixed alphanumerics and lower-case hex (formats that want
# hex only). Neither is a secret of any rule by itself in the positions they are put.
_FILLERS = ("Zq7Xr2Vb9Kp4Wm6Ty3Hn8Jc5Ld1Sg0FaQe7Ru2Io9PzXw4Mv6Nb3Ck8Jh5Gf1Ds0Ae", "0123456789abcdef" * 4)
_RUN = re.compile(r"[A-Za-z0-9_\-+/=.~:]+")
_TOKEN = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{8}\]")
_QUOTES = "\"'`"
_TYPED_USERINFO = re.compile(r"[a-z][a-z0-9+.-]*://[^\s/@:]*:([^\s/@]+)$", re.IGNORECASE)
_TYPED_CELL = re.compile(r"<t[dh]\b[^>]*>([^<]+)$", re.IGNORECASE)
# What a chunk whose file cannot be read is sent as (PieceRedactor.chunk).
WITHHELD = "(codectx: this part of {path} was left out: the file could not be read to check it)"
# A string a message quotes as a value (PieceRedactor.message).
_DQ = r'"(?:[^"\n\\]|\\.){1,200}"'  # a double-quoted string as a checker prints it, escapes kept
_LITERAL_TYPE = re.compile(
    # pyright's and mypy's Literal[...]; TypeScript's '"..."' and '`...`'; Go's `"..." (untyped string
    # constant)` and `(untyped string constant "...")`; Flow's and javac's `string literal ...`;
    # rustc's `found `"..."``; Scala 3's `("..." : String)`; PHPStan's `'...' given`; Sorbet's
    # `String("...")`.
    rf"""Literal\[([^\]\n]{{1,400}})\]|'({_DQ})'|({_DQ}) \((?:untyped )?string constant"""
    rf"""|untyped string constant ({_DQ})\)|string literal (`[^`\n]{{1,200}}`|{_DQ})|`({_DQ})`"""
    rf"""|\(({_DQ}) : String\)|('(?:[^'\n\\]|\\.){{1,200}}') given\b|String\(({_DQ})\)"""
    rf"""|'(`[^`\n]{{1,200}}`)'"""
)
_QUOTED = re.compile(r""""((?:[^"\n\\]|\\.){1,200})"|'((?:[^'\n\\]|\\.){1,200})'|`([^`\n]{1,200})`""")


@dataclass(frozen=True)
class Secret:
    """A secret's span in one scanned text (offsets into it) and the rule that found it."""

    start: int
    end: int
    rule: str


@dataclass(frozen=True)
class PieceFinding:
    """One masked span in one piece: rule, file, 0-based line in that file, length, tag. Never the value."""

    rule: str
    origin: str
    line: int
    length: int
    hmac8: str

    def as_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "file": self.origin,
            "line": self.line,
            "length": self.length,
            "hmac8": self.hmac8,
        }


@dataclass
class Placeholders:
    """token -> the original text it replaced, for one request (kept in memory, never sent)."""

    originals: dict[str, str] = field(default_factory=dict)

    def add(self, token: str, original: str) -> None:
        self.originals.setdefault(token, original)

    def __len__(self) -> int:
        return len(self.originals)

    def tokens_in(self, text: str) -> list[str]:
        return _TOKEN.findall(text) if TOKEN_PREFIX in text else []


@dataclass
class PieceRedactor:
    """Redacts the pieces of one request; holds that request's secrets (memory only) and placeholders."""

    redactor: Redactor
    deadline: float | None = None
    placeholders: Placeholders = field(default_factory=Placeholders)
    findings: list[PieceFinding] = field(default_factory=list)
    known: dict[str, str] = field(default_factory=dict)  # secret value -> rule, this request only

    # ---------------------------------------------------------------- documents

    def document(
        self,
        text: str,
        origin: str,
        cuts: Sequence[tuple[int, int]],
        cursor: int | None = None,
    ) -> list[str]:
        """Each cut [start, end) of `text`, redacted; secrets are found in the original text around them.

        `cursor` (an offset): the line it is on is probed for a value being typed.
        """
        cuts = [(max(0, a), min(len(text), b)) for a, b in cuts]
        live = [(a, b) for a, b in cuts if b > a]
        if not live:
            return ["" for _ in cuts]
        lo, hi = _region(text, min(a for a, _ in live), max(b for _, b in live))
        secrets = self._scan(text, origin, lo, hi)
        if cursor is not None and lo <= cursor <= hi:
            secrets += self._typing(text, origin, cursor)
        secrets = _union(secrets)
        lines = _LineIndex(text)
        return [self._mask(text, a, b, secrets, origin, lines) for a, b in cuts]

    def text(self, text: str, origin: str) -> str:
        """A standalone piece (a chunk whose file is not at hand): redacted on its own, with its origin."""
        return self.document(text, origin, [(0, len(text))])[0]

    def message(self, text: str, origin: str) -> str:
        """A tool's message about code (a diagnostic, an instruction that quotes one), redacted as a
        piece, with each string a literal type quotes judged as if a token's name stood before it.

        A type checker quotes a constant's value wherever the constant is defined (pyright's and
        mypy's `Literal['...']`, TypeScript's `'"..."'`): in a file this request does not carry (a
        git-ignored settings module), whose lines no rule read, so nothing names the value a
        secret. Names the message quotes (`"open_pool"`, `'ValidationError'`) are left alone."""
        secrets = []
        for m in _LITERAL_TYPE.finditer(text):
            group = m.lastindex or 0
            for q in _QUOTED.finditer(text, m.start(group), m.end(group)):
                inner = q.lastindex or 0
                value = q.group(inner).removesuffix("…")  # a long literal is printed cut
                rules = self._judge_quoted(value)
                if rules:
                    secrets.append(Secret(q.start(inner), q.end(inner), rules[0]))
                    self.known.setdefault(value, rules[0])
        if secrets:
            text = self._mask(text, 0, len(text), secrets, origin, _LineIndex(text))
        return self.text(text, origin)

    def _now(self, text: str, origin: str, start_line: int, source: str) -> str:
        """The lines of `source` where a stale chunk was (as many as it had), judged in place."""
        starts = _line_starts(source)
        count = len(starts) - 1
        if start_line >= count:
            return WITHHELD.format(path=origin)
        last = min(count, start_line + text.count("\n") + 1)
        return self.document(source, origin, [(starts[start_line], starts[last] - 1)])[0]

    def _judge_quoted(self, value: str) -> list[str]:
        """Rules that find a literal a diagnostic quotes a secret: judged as a token's value (a word,
        `Literal['production']`, is no secret there), words with spaces as a passphrase (each word
        as a token masked `Failed to connect to db-primary01`)."""
        name = "passphrase" if " " in value else "token"
        return self.redactor.judge(name, value, "message.py", self.deadline)

    def chunk(self, text: str, origin: str, start_line: int, source: str | None) -> str:
        """A retrieved chunk, redacted with the lines around it in `source` (its file now).

        A chunk may carry a header line (its definition's signature) and end in a cut marker; those
        lines are redacted on their own, the rest as a region of the file. A chunk no longer found
        at `start_line` (the file changed since it was indexed) is replaced by the file's lines
        there now, judged in place. Without its file (gone, unreadable) a chunk is withheld: judged
        alone, a dump's rows or a key block's middle lines are no secrets without the INSERT line or
        the BEGIN line above them.
        """
        if start_line < 0 or not text:
            return self.text(text, origin)
        if source is None:
            return WITHHELD.format(path=origin)
        located = _locate(text, source, start_line)
        if located is None:
            return self._now(text, origin, start_line, source)
        head, (a, b), tail = located
        parts = []
        if head:
            parts.append(self.text(head, origin) + "\n")
        parts.append(self.document(source, origin, [(a, b)])[0])
        if tail:
            parts.append("\n" + self.text(tail, origin))
        return "".join(parts)

    def learn(self, text: str, origin: str, cuts: Sequence[tuple[int, int]]) -> None:
        """Find the secrets around each cut [start, end) of `text` as `document` would, and remember
        them for this request without making a piece: a text made of those lines elsewhere (a
        diff's hunks) then has them masked by `echo`. A secret over several lines (a key) is
        remembered line by line too, since such a text may hold only some of its lines."""
        for a, b in cuts:
            a, b = max(0, a), min(len(text), b)
            if b <= a:
                continue
            lo, hi = _region(text, a, b)
            for s in self._scan(text, origin, lo, hi):
                value = text[s.start : s.end]
                for line in value.split("\n") if "\n" in value else ():
                    line = line.strip()
                    if len(line) >= ECHO_MIN_CHARS and not line.startswith("-----"):
                        self.known.setdefault(line, s.rule)

    def echo(self, text: str) -> str:
        """`text` with every value found secret earlier in this request masked (no other scanning)."""
        if not self.known or not any(v in text for v in self.known):
            return text
        secrets: list[Secret] = []
        for value, rule in self.known.items():
            pos = text.find(value)
            while pos != -1:
                secrets.append(Secret(pos, pos + len(value), rule))
                pos = text.find(value, pos + len(value))
        return self._mask(text, 0, len(text), _union(secrets), "", _LineIndex(text))

    # ---------------------------------------------------------------- scanning

    def _scan(self, text: str, origin: str, lo: int, hi: int) -> list[Secret]:
        # A region inside a SQL statement's rows or a table is read with its header in front
        # (sqlrows.lead, tables.lead): the names that make its values secret are only there.
        lead = sqlrows.lead(text, lo, hi) + tables.lead(text, lo, hi, origin)
        region = lead + text[lo:hi]
        result = self.redactor.redact(region, origin, self.deadline, known=self.known.items())
        out = []
        shift = lo - len(lead)
        for f in result.findings:
            if f.end <= len(lead):
                continue  # in the header put in front: not part of this text
            start = max(f.start, len(lead))
            out.append(Secret(shift + start, shift + f.end, f.rule))
            value = region[start : f.end]
            self.known.setdefault(value, f.rule)
            if '"' in value or "'" in value:  # literals joined (`"sk-..." + "..."`): each part too
                for part in _JOINT.split(value):
                    if _own_part(part):
                        self.known.setdefault(part, f.rule)
        return out

    def _typing(self, text: str, origin: str, cursor: int) -> list[Secret]:
        """Secrets that a value being typed at `cursor` will be once finished (spans in `text`)."""
        start = text.rfind("\n", 0, cursor) + 1
        end = text.find("\n", cursor)
        end = len(text) if end == -1 else end
        line, col = text[start:end], cursor - start
        # Each probe is read below the lines above it (and the header of a SQL statement or a table
        # it sits in): a value typed in a tuple's second row is a password by its column's name.
        above = start
        for _ in range(MARGIN_LINES):
            if above <= 0:
                break
            above = text.rfind("\n", 0, above - 1) + 1
        context = sqlrows.lead(text, above, end) + tables.lead(text, above, end, origin) + text[above:start]
        shift = len(context)
        out: list[Secret] = []
        formats, slots = self.redactor.rules.format_ids, self.redactor.rules.slot_ids
        # A bare value after `=`/`:` is a literal being typed only in config and shell files: in code
        # it is an expression (`password = os.environ[...]`), which completions must see.
        bare_literal = filters.bare_is_config(line, origin)
        # A command's argument only outside prose: after "password " in a README a word is a word.
        arguments = bare_literal and not filters.is_prose_file(origin)
        for probe, keep, how in _probes(line, col, bare_literal, arguments):
            for f in self._probe_findings(context + probe, origin):
                f_start, f_end = f.start - shift, f.end - shift
                if f_end <= 0:
                    continue  # in the lines above: their own scan masks them
                if how == _FILLED and (f.rule not in formats or not keep[0] <= f_start < keep[1] - 3):
                    continue  # lengthened by filler: only a provider format whose prefix was typed counts
                if how == _SLOT and (f.rule not in slots or not keep[0] <= f_start < keep[1] <= f_end):
                    # A value's slot: only a rule that reads the value being typed as a secret, from
                    # where it starts (the slot's start, or after a `user,` / `user:` in it) to the
                    # cursor and on.
                    continue
                s, e = max(f_start, keep[0]), min(f_end, keep[1])
                if e > s:
                    out.append(Secret(start + s, start + e, f.rule))
        return out

    def _probe_findings(self, probe: str, origin: str) -> list[Finding]:
        return self.redactor.redact(probe, origin, self.deadline).findings

    # ---------------------------------------------------------------- masking

    def _mask(self, text: str, a: int, b: int, secrets: list[Secret], origin: str, lines: _LineIndex) -> str:
        out: list[str] = []
        pos = a
        for s in secrets:
            if s.end <= a or s.start >= b:
                continue
            cs, ce = max(s.start, a), min(s.end, b)
            original = text[cs:ce]
            mark = tag(self.redactor.key, original)
            self.redactor.remember_length(mark, ce - cs)
            token = f"{TOKEN_PREFIX}{s.rule}:{mark}]"
            self.placeholders.add(token, original)
            self.findings.append(PieceFinding(s.rule, origin, lines.line_of(cs), ce - cs, mark))
            out.append(text[pos:cs])
            out.append(token + "\n" * original.count("\n"))
            pos = ce
        out.append(text[pos:b])
        return "".join(out)


# ---------------------------------------------------------------- helpers


class _LineIndex:
    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: list[int] | None = None

    def line_of(self, offset: int) -> int:
        if self._starts is None:
            starts = [0]
            pos = self.text.find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = self.text.find("\n", pos + 1)
            self._starts = starts
        return bisect.bisect_right(self._starts, offset) - 1


def _region(text: str, lo: int, hi: int) -> tuple[int, int]:
    """[lo, hi) widened to whole lines, MARGIN_LINES either side, and any key block reaching into it."""
    for _ in range(MARGIN_LINES + 1):
        if lo <= 0:
            lo = 0
            break
        lo = text.rfind("\n", 0, lo - 1) + 1
    for _ in range(MARGIN_LINES + 1):
        nxt = text.find("\n", hi)
        if nxt == -1:
            hi = len(text)
            break
        hi = nxt + 1
    begin = text.rfind("-----BEGIN", max(0, lo - KEY_BLOCK_REACH), lo)
    if begin != -1 and "PRIVATE KEY" in text[begin : begin + 80]:
        end = text.find("-----END", begin)
        if end == -1 or end >= lo:
            lo = text.rfind("\n", 0, begin) + 1
    last_begin = text.rfind("-----BEGIN", lo, hi)
    if last_begin != -1 and "PRIVATE KEY" in text[last_begin : last_begin + 80]:
        end = text.find("-----END", last_begin, last_begin + KEY_BLOCK_REACH)
        if end >= hi - 8:
            stop = text.find("\n", end)
            hi = len(text) if stop == -1 else stop + 1
    return lo, hi


def _union(secrets: Iterable[Secret]) -> list[Secret]:
    """Overlapping spans merged (the first rule's name kept), in order."""
    merged: list[Secret] = []
    for s in sorted(secrets, key=lambda s: (s.start, -s.end)):
        if merged and s.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Secret(last.start, max(last.end, s.end), last.rule)
        else:
            merged.append(s)
    return merged


_CLOSED, _FILLED, _SLOT = "closed", "filled", "slot"  # how a probe finished the value being typed
# The bare value that ends at the cursor (`PASSWORD=Wq8`, `password: Wq8`), after `=` or `:`.
# The bare value being typed on a config line (`PASSWORD=Wq:8z`, `password: Wq8`, `pw = a b`): all
# of it after the first `=` or `: ` that follows the line's key, to the cursor.
_BARE_VALUE = re.compile(r"^[ \t]*(?:export[ \t]+)?[\"']?[\w.-]+[\"']?[ \t]*(?:=|:[ \t])[ \t]*(\S.*)\Z")
# A command's argument being typed, after a space: `-w Tq9`, `-u app,Tq9`, `/p:Tq9`.
_BARE_ARGUMENT = re.compile(r"[ \t]([^\s\"'`]+)\Z")
# What finishes a value typed in a password's place: a token (mixed letters and digits), and words,
# for a passphrase being typed (`"summit t` -> `"summit tortoise quartz fjord"`).
_SLOT_FILLERS = (_FILLERS[0], "ortoise quartz fjord")


def _probes(
    line: str, col: int, bare_literal: bool = True, arguments: bool = True
) -> list[tuple[str, tuple[int, int], str]]:
    """Finished versions of the cursor's line, each with the span of `line` a finding may mask.

    An unclosed quote before the cursor is closed (at the cursor, and at the line's end); a token run
    that touches the cursor is lengthened with each filler (`_FILLED`: only provider formats may
    count there). A value being typed, quoted or (`bare_literal`: in a config or shell file) bare
    after `=`/`:` or (`arguments`: not in prose) as a command's argument, is also finished with a filler
    that any value check takes (`_SLOT`): a rule that reads the whole value as a secret by where
    it sits (a password's name, a connect call's argument) masks it from its first character,
    before its typed part would pass the rule's checks alone. Findings count only inside the value
    actually typed.
    """
    probes: list[tuple[str, tuple[int, int], str]] = []
    head = line[:col]
    quote, opened = _open_quote(head)
    if quote:
        probes.append((head + quote + line[col:], (opened + 1, col), _CLOSED))
        if quote not in line[col:]:
            probes.append((line + quote, (opened + 1, len(line)), _CLOSED))
        if col > opened + 1:
            probes += [(head + f + quote + line[col:], (opened + 1, col), _SLOT) for f in _SLOT_FILLERS]
    elif bare_literal:
        # A bare value after its key (`password: Wq8`), or a command's argument (`ldapsearch -w Tq9`,
        # `lftp -u app,Tq9`): finished, it may be a secret by where it stands.
        bare = _BARE_VALUE.match(head) or (_BARE_ARGUMENT.search(head) if arguments else None)
        if bare:
            probes += [(head + f + line[col:], (bare.start(1), col), _SLOT) for f in _SLOT_FILLERS]
    userinfo = _TYPED_USERINFO.search(head)
    if userinfo and "@" not in line[col:]:
        # `postgres://app:<password being typed>`: the host is not typed yet.
        probes.append((head + "@h" + line[col:], (userinfo.start(1), col), _CLOSED))
    cell = _TYPED_CELL.search(head)
    if cell:
        # `<td>value being typed`: the cell and its row are not closed yet.
        probes.append((head + "</td></tr>" + line[col:], (cell.start(1), col), _CLOSED))
    run = None
    for m in _RUN.finditer(line):
        if m.start() <= col <= m.end():
            run = m
            break
    if run is not None and run.end() - run.start() >= PROBE_MIN_CHARS:
        for filler in _FILLERS:
            probe = line[: run.end()] + filler + line[run.end() :]
            probes.append((probe, (run.start(), run.end()), _FILLED))
            if quote:
                closed = line[: run.end()] + filler + quote + line[run.end() :]
                probes.append((closed, (run.start(), run.end()), _FILLED))
    return probes


def _open_quote(head: str) -> tuple[str, int]:
    """(the quote character of a string left open in `head`, its offset), or ("", -1)."""
    current, opened, i = "", -1, 0
    while i < len(head):
        c = head[i]
        if current:
            if c == "\\":
                i += 2
                continue
            if c == current:
                current, opened = "", -1
        elif c in _QUOTES:
            current, opened = c, i
        elif c == "#" and (i == 0 or head[i - 1] in " \t"):
            break  # a comment: quotes after it do not open strings
        i += 1
    return current, opened


def _locate(text: str, source: str, start_line: int) -> tuple[str, tuple[int, int], str] | None:
    """(header, [a, b) of the chunk's body in `source`, trailing marker) or None when it is not there."""
    rows = text.split("\n")
    starts = _line_starts(source)
    count = len(starts) - 1
    if start_line >= count:
        return None
    for head_n in (0, 1):
        body = rows[head_n:]
        for tail_n in (0, 1):
            core = body[: len(body) - tail_n] if tail_n else body
            if not core or start_line + len(core) > count:
                continue
            a = starts[start_line]
            b = starts[start_line + len(core)] - 1
            if source[a:b] == "\n".join(core):
                head = "\n".join(rows[:head_n])
                tail = "\n".join(body[len(core) :])
                return head, (a, b), tail
    return None


@functools.lru_cache(maxsize=16)
def _line_starts(source: str) -> tuple[int, ...]:
    """Offsets where each line of `source` starts, plus one past the end (several chunks share a file)."""
    starts = [0]
    pos = source.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = source.find("\n", pos + 1)
    starts.append(len(source) + 1)
    return tuple(starts)
