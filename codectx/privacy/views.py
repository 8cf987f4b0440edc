"""Other ways of reading a text, so a secret written in pieces or encoded is still seen whole.

- `joined`: string literals split by concatenation (`"ghp_ab" + "cd..."`,
  Python's adjacent literals, `..` in Lua, `.` in PHP, `&` in VB, a line
  continuation between them, appends to a builder) and bare values continued
  after a backslash, read as one literal. A finding in the joined
  view maps back to the original span from its first character to its last,
  junctions included.
- `decoded`: base64 runs that decode to printable text (a provider token or a
  `user:password` pair stored base64-encoded) read as that text; a finding in
  it redacts the whole run.
- `unescaped`: runs of percent-encoding and `\\xNN`/`\\uNNNN` escapes (a token in a
  URL's query as `sk%5Flive%5F...`, one spelled `"\\u0067\\u0068\\u0070_..."`) read as
  the characters they stand for; a finding in it redacts the whole run.
- `spelled`: lists of character codes or character literals
  (`String.fromCharCode(103,104,...)`, `bytes([80, 101, ...])`, Java's
  `char[] PASS = {'G', 'r', ...}`, `[0x6e, 0x7a, ...]`) read as the string they
  spell, after the text before the list on its line (where a name may say it is
  a password); a finding in it redacts the whole list.

Pure functions: the redactor scans each view with the same rules.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import re2

# A closing quote, a concatenation operator (or none, on one line), the same opening quote, between two
# token characters: the literals on either side look like parts of one value, not like prose.
_T = r"[A-Za-z0-9+/_=.~-]"
# The shell's ways to put a quote in a quoted word: `'Pel'"'"'ican'` and `'Pel'\''ican'` are `Pel'ican`.
_SHELL_QUOTE = "'\"'\"'|\"'\"'\"|'\\\\''"
# A string built piece by piece: `sb.append("ghp_ab").append("cd...")`, C#'s `.Append(`, Rust's
# `s.push_str("...")`, Go's `b.WriteString("...")`, `s += "..."` on the next line.
_APPEND = (
    r"[\"']\)[ \t]*;?\s*(?:[\w.]*\.)?(?i:append|push_str|writestring)\(\s*[\"']"
    r"|[\"'][ \t]*;?\s*[\w.]+[ \t]*\+=[ \t]*[\"']"
)
_OP = r"(?:\+|\.\.?|&|\|\|)"
_GAP = rf"[ \t]*(?:{_OP}[ \t]*(?:[\\`]?\r?\n[ \t]*)?|\\?\r?\n[ \t]*{_OP}[ \t]*|\\\r?\n[ \t]*)?"
_IMPLICIT = r"[ \t]*\r?\n[ \t]*"  # adjacent literals on two lines: Python and C only


def _junction_regex(implicit: bool) -> re2._Regexp:
    gap = _GAP + ("|" + _IMPLICIT if implicit else "")
    quotes = rf"""("(?:{gap})"|'(?:{gap})'|{_SHELL_QUOTE}|{_APPEND})"""
    # A URL's user part may end a literal (`"mongodb://admin:" + pw`) and its host start one (`"@db"`).
    tokens = rf"(?:{_T}|:){quotes}(?:{_T}|@)"
    # Words split at a space (a passphrase: `"correct horse " "battery staple"`), lower case on both
    # sides: a usage line's `"--password " + "SECRET_NAME"` stays two texts.
    words = rf"(?:[a-z]| ){quotes}(?:[a-z]| )"
    return re2.compile(f"{tokens}|{words}".encode())


# A bare value continued on the next line after a backslash (`db.password=Pel\`, Dockerfile
# `ENV PASSWORD=\`), and a quoted one (YAML's escaped line break, Haskell's string gap `\` ... `\`).
# Which of them join is up to the file (`_bare_joins`).
_BARE_JUNCTION = re2.compile(rb"(?:[A-Za-z0-9+/_.~-]|=[ \t]*)(\\\r?\n[ \t]*\\?)[A-Za-z0-9+/_=.~-]")
_CONTINUED_FILES = (".properties", ".ini", ".cfg", ".conf", ".env")


_JUNCTIONS = {implicit: _junction_regex(implicit) for implicit in (False, True)}
_IMPLICIT_SUFFIXES = (".py", ".pyi", ".c", ".h", ".cc", ".cpp", ".hpp", ".cxx")
_B64_RUN = re2.compile(rb"(?:^|[^A-Za-z0-9+/_=-])([A-Za-z0-9+/_-]{16,}={0,2})(?:$|[^A-Za-z0-9+/_=-])")
_PRINTABLE = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


@dataclass(frozen=True)
class Joined:
    """A text with concatenation junctions removed, and how to map its offsets back."""

    text: str
    positions: list[int]  # view offset where each removed junction was
    removed: list[int]  # characters removed up to and including each junction (cumulative)
    spans: list[tuple[int, int]]  # each junction's span in the original

    def start(self, v: int) -> int:
        i = bisect.bisect_right(self.positions, v)
        return v + (self.removed[i - 1] if i else 0)

    def end(self, v: int) -> int:
        i = bisect.bisect_left(self.positions, v)
        return v + (self.removed[i - 1] if i else 0)

    def crosses(self, start: int, end: int) -> bool:
        """The original span [start, end) contains a junction."""
        return any(start < s and e < end for s, e in self.spans)

    def touches(self, start: int, end: int) -> bool:
        """The original span [start, end) is a whole literal next to a junction: a value found
        only in the joined text (`"postgres://app:" + "pw" + "@db"`), not on its own."""
        return any(e == start or s == end for s, e in self.spans)


def _junctions(text: str, origin: str) -> list[tuple[int, int]]:
    implicit = origin.lower().endswith(_IMPLICIT_SUFFIXES)
    spans = list(_spans(_JUNCTIONS[implicit], text))
    if "\\\n" in text or "\\\r" in text:
        spans += [span for span in _spans(_BARE_JUNCTION, text) if _bare_joins(text, span, origin)]
    spans += _token_pieces(text)
    if not spans:
        return spans
    spans.sort()
    out = [spans[0]]
    for span in spans[1:]:
        if span[0] >= out[-1][1]:  # junctions found twice (or overlapping) count once
            out.append(span)
    return out


# A literal that opens with a provider token's documented prefix, then whatever joins the next
# literals to it: `"AKIA..".concat("...")`, `"".join(["ghp_..", "..."])`, `sprintf('%s%s', 'sk_live_..',
# '...')`, `t = "xoxb-.."` / `t << "..."`. A token is split so that no scanner sees it whole; any
# syntax between the pieces (a call, a list's comma, a line) is read as a junction.
_TOKEN_START = re2.compile(
    rb"""["'`]((?:AKIA|ASIA|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk_live_|rk_live_|sk-|xox[abposr]-"""
    rb"""|AIza|hf_|npm_|SG\.|pypi-|dop_v1_|shpat_|sq0atp-|EAA)[\w.+/=-]*)["'`]"""
)
_TOKEN_NEXT = re.compile(r"""[^"'`\n]{0,60}(?:\r?\n[^"'`\n]{0,60})?["'`]([\w.+/=-]+)["'`]""")
MAX_PIECES = 6
TOKEN_PIECE_MAX = 24  # a first piece this long holds the whole prefix and then some: not split
_RANDOM_PART = re.compile(r"[A-Z0-9]")  # an upper-case letter or a digit after the prefix
_WHOLE_KEY_ID = re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}\Z")


def _token_pieces(text: str) -> list[tuple[int, int]]:
    """Junctions after a short literal that opens with a provider token's prefix, up to MAX_PIECES
    pieces."""
    spans: list[tuple[int, int]] = []
    for start, end in _spans(_TOKEN_START, text):
        if end - start >= TOKEN_PIECE_MAX or _WHOLE_KEY_ID.match(text, start, end):
            continue  # a whole token (the literal after it is another value), not a piece of one
        if not _RANDOM_PART.search(text, start + 3, end):
            continue  # a name with a token's prefix (`"hf_api"`, `"sk-learn"`): no random part
        close = end  # the first piece's closing quote
        for _ in range(MAX_PIECES - 1):
            piece = _TOKEN_NEXT.match(text, close + 1)
            if piece is None:
                break
            spans.append((close, piece.start(1)))
            close = piece.end(1)
    return spans


def _bare_joins(text: str, span: tuple[int, int], origin: str) -> bool:
    """A backslash at a line's end continues a bare value: in a properties or INI file always (the
    next line's indent is dropped); after `=` (the value starts on the next line); elsewhere only
    onto a line that starts without a space (in shell, the space separates the next word: `-pPW\\`
    then `  --host=db`). Not in prose, where a trailing backslash is a line break. In a YAML
    double-quoted scalar, and Haskell's string gap, always."""
    from codectx.privacy import filters  # filters reads base64 with this module: imported late

    start, end = span
    name = origin.lower()
    if text[end - 1 : end] == "\\":
        return name.endswith((".hs", ".lhs", ".purs"))  # a string gap: `"AKIA..\` then `  \...."`
    if name.endswith(_CONTINUED_FILES):
        return True
    if name.endswith((".yaml", ".yml")):
        # Inside a double-quoted scalar an escaped line break joins the lines, their indent dropped.
        return text[text.rfind("\n", 0, start) + 1 : start].count('"') % 2 == 1
    if filters.is_prose_file(origin):
        return False
    return text[max(0, start - 80) : start].rstrip(" \t").endswith("=") or text[end - 1 : end] == "\n"


def _spans(regex: re2._Regexp, text: str) -> Iterator[tuple[int, int]]:
    """Character spans of the first group that took part in each match of a bytes regex over `text`
    (UTF-8, lone surrogates passed through)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) == len(text):  # ASCII: byte offsets are character offsets
        for m in regex.finditer(data):
            yield _group_span(m)
        return
    # Byte offsets to character offsets, counted on from the last one: the matches come in order,
    # so the whole text is decoded once (decoding from the start at each match was quadratic: a
    # 100 KB request body with one non-ASCII character and thousands of identifier-like runs).
    byte_at = char_at = 0

    def char_of(offset: int) -> int:
        nonlocal byte_at, char_at
        if offset >= byte_at:
            char_at += len(data[byte_at:offset].decode("utf-8", "surrogatepass"))
        else:
            char_at -= len(data[offset:byte_at].decode("utf-8", "surrogatepass"))
        byte_at = offset
        return char_at

    for m in regex.finditer(data):
        a, b = _group_span(m)
        yield char_of(a), char_of(b)


def _group_span(m: re2._Match) -> tuple[int, int]:
    """The span of the first group that took part (a regex's alternatives each have their own)."""
    for i in range(1, m.re.groups + 1):
        if m.start(i) >= 0:
            return m.start(i), m.end(i)
    return m.start(), m.end()


def _may_join(text: str) -> bool:
    return '"' in text or "'" in text or "\\\n" in text or "\\\r" in text


def junction_regions(text: str, origin: str = "", pad_lines: int = 2) -> list[tuple[int, int]]:
    """[start, end) regions of whole lines around clusters of concatenation junctions."""
    if not _may_join(text):
        return []
    regions: list[tuple[int, int]] = []
    for start, end in _junctions(text, origin):
        lo = start
        for _ in range(pad_lines + 1):
            lo = text.rfind("\n", 0, max(0, lo - 1)) + 1 if lo > 0 else 0
        hi = end
        for _ in range(pad_lines + 1):
            nxt = text.find("\n", hi)
            hi = len(text) if nxt == -1 else nxt + 1
        if regions and lo <= regions[-1][1]:
            regions[-1] = (regions[-1][0], max(hi, regions[-1][1]))
        else:
            regions.append((lo, hi))
    return regions


def joined(text: str, origin: str = "") -> Joined | None:
    """The joined view of `text`, or None when it has no concatenated literals."""
    if not _may_join(text):
        return None
    parts: list[str] = []
    positions: list[int] = []
    removed: list[int] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    total = 0
    view = 0
    for start, end in _junctions(text, origin):
        parts.append(text[pos:start])
        view += start - pos
        total += end - start
        positions.append(view)
        removed.append(total)
        spans.append((start, end))
        pos = end
    if not spans:
        return None
    parts.append(text[pos:])
    return Joined("".join(parts), positions, removed, spans)


def encoded_runs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded text) of base64 runs in `text` that decode to printable text."""
    out = []
    for start, end in _spans(_B64_RUN, text):
        run = text[start:end]
        if len(run) >= HEX_RUN_MIN and _HEX_ONLY.match(run):
            decoded = decode_hex(run)  # `bytes.fromhex("6768705f...")`: a token spelled in hex
            if decoded is not None:
                out.append((start, end, decoded))
            continue
        if len(run) < 24 and not (run.endswith("=") or len(run) % 4 == 0):
            continue  # a short run is decoded only when it has base64's shape (padding or whole quads)
        if not (any(c.isupper() for c in run) and any(c.islower() for c in run)):
            continue
        decoded = decode_base64(run)
        if decoded is not None:
            out.append((start, end, decoded))
    return out


HEX_RUN_MIN = 24
_HEX_ONLY = re2.compile(r"^(?:[0-9a-f]{2})+$|^(?:[0-9A-F]{2})+$")


def decode_hex(run: str) -> str | None:
    """A hex run as the printable ASCII it encodes (12 characters at least); None for anything else
    (a digest's random bytes)."""
    raw = bytes.fromhex(run)
    if len(raw) < 12 or any(b not in _PRINTABLE for b in raw):
        return None
    return raw.decode("ascii")


def decode_base64(run: str) -> str | None:
    """A base64 run (standard or URL-safe alphabet, padding optional) as the printable ASCII it
    encodes; None when it is not valid base64 or decodes to anything else (a key's random bytes)."""
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(
            padded, altchars=b"-_" if ("-" in body or "_" in body) else None, validate=True
        )
    except (binascii.Error, ValueError):
        return None
    if len(raw) < 12 or any(b not in _PRINTABLE for b in raw):
        return None
    return raw.decode("ascii")


_ESCAPED_RUN = re.compile(
    r"(?:[A-Za-z0-9_.~+/=-]|%[0-9A-Fa-f]{2}|\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|&#[0-9]{2,4};|&#x[0-9A-Fa-f]{2,4};){12,}"
)
_ONE_ESCAPE = re.compile(
    r"%(?P<p>[0-9A-Fa-f]{2})|\\x(?P<x>[0-9A-Fa-f]{2})|\\u(?P<u>[0-9A-Fa-f]{4})|&#(?P<d>[0-9]{2,4});|&#x(?P<h>[0-9A-Fa-f]{2,4});"
)
# Characters that show nothing: an escaped one inside a token (`sk_live_ab\u200bcd`) hides it from
# every rule, and is dropped from the decoded view.
_INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")
LONE_ESCAPE_MIN = 16  # a run with one escape is read when it decodes to at least this many characters


def _unescape(e: re.Match[str]) -> str:
    decimal = e.group("d")
    c = chr(
        int(decimal) if decimal else int(e.group("p") or e.group("x") or e.group("u") or e.group("h"), 16)
    )
    return "" if c in _INVISIBLE else c


def unescaped_runs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded) of runs holding percent, `\\x`/`\\u` or HTML character escapes, each
    read as the printable ASCII it stands for (a run that decodes to anything else is left alone;
    invisible characters are dropped). One escape is enough in a run that decodes to
    LONE_ESCAPE_MIN characters or more: `\\u0067hp_...`, `&#103;hp_...`."""
    if "%" not in text and "\\x" not in text and "\\u" not in text and "&#" not in text:
        return []
    out = []
    done = -1  # the end of the last line read: only lines holding an escape are (most have none)
    for hit in _ONE_ESCAPE.finditer(text):
        if hit.start() < done:
            continue
        lo = text.rfind("\n", 0, hit.start()) + 1
        done = text.find("\n", hit.end())
        done = len(text) if done == -1 else done
        for m in _ESCAPED_RUN.finditer(text, lo, done):
            run = m.group(0)
            escapes = len(_ONE_ESCAPE.findall(run))
            if escapes == 0:
                continue
            decoded = _ONE_ESCAPE.sub(_unescape, run)
            if escapes < 2 and len(decoded) < LONE_ESCAPE_MIN:
                continue
            if decoded and all(32 < ord(c) < 127 or c in "\t\n\r" for c in decoded):
                out.append((m.start(), m.end(), decoded))  # a data: URL's file has lines
    return out


# What an escape in a JSON or C-like string stands for, two characters for two (offsets are kept).
_ESCAPES = {"n": " \n", "t": " \t", "r": " \r", '"': ' "', "'": " '"}
_ESCAPED_QUOTE = re.compile(r"\\[\"']")
_ESCAPE = re.compile(r"\\(.)")
_PAIR = re2.compile(r"^[\w.@+-]{1,64}:[^\s{}\[\]\"]{3,}$")


def escaped_view(text: str) -> str | None:
    """`text` with every line that holds an escaped quote read unescaped (same length), or None.

    Code stored inside a string (a notebook cell, a JSON config holding a script) then reads like
    code: `password = \\"...\\"` is seen as `password =  "..." `. Every such line, however many
    (a cap let a long JSON file's later lines through unread)."""
    if '\\"' not in text and "\\'" not in text:
        return None
    parts: list[str] = []
    pos = 0
    while True:
        hit = _ESCAPED_QUOTE.search(text, pos)
        if hit is None:
            break
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.end())
        end = len(text) if end == -1 else end
        parts += [text[pos:start], unescape_line(text[start:end])]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


# Characters a parser or a model reads as a line break or a space, or as the ASCII character they
# are a wide form of, that the rules (written for ASCII) would not: a lone CR (classic Mac line
# ends), VT, FF, NEL, the Unicode line and paragraph separators; no-break, ideographic and other
# Unicode spaces (`password\u00a0=\u00a0...` is `password = ...` to Python's configparser);
# fullwidth ASCII (`ｐａｓｓｗｏｒｄ＝...`). One character each, so offsets hold.
_FOLD_MAP = {
    **{c: "\n" for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"},
    **{c: " " for c in "\u00a0\u1680\u202f\u205f\u3000"},
    **{chr(c): " " for c in range(0x2000, 0x200B)},
    **{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)},
}
_FOLD = str.maketrans(_FOLD_MAP)
_ASCII_FOLDED = tuple(c for c in _FOLD_MAP if c.isascii())
_LONE_CR = re.compile(r"\r(?!\n)")
_FOLDED = re.compile("[" + "".join(re.escape(c) for c in _FOLD_MAP) + "]|\r(?!\n)")


def folded(text: str) -> str:
    """`text` as the rules read it (same length): see _FOLD_MAP."""
    if text.isascii():  # most texts: a few scans in C instead of a regex's
        if not any(c in text for c in _ASCII_FOLDED) and ("\r" not in text or not _LONE_CR.search(text)):
            return text
    elif _FOLDED.search(text) is None:
        return text
    if "\r" in text:
        text = _LONE_CR.sub("\n", text)
    return text.translate(_FOLD)


def unescape_line(line: str) -> str:
    """One line unescaped, same length: escaped quotes alternate opening (` "`) and closing (`" `)."""
    opened: dict[str, bool] = {}

    def one(m: re.Match[str]) -> str:
        c = m.group(1)
        if c in "\"'":
            opening = not opened.get(c, False)
            opened[c] = opening
            return " " + c if opening else c + " "
        return _ESCAPES.get(c, m.group(0))

    return _ESCAPE.sub(one, line)


# A list of eight or more printable character codes or character literals, in brackets of any kind
# (`'G'`, `b'G'`, `'\\x47'`, `71`, `0x47`, `0o107`, `0b1000111`, `(char)71`, Ruby's `?G`), a C string's
# terminator (`0`, `'\\0'`) at its end, or after Perl's `pack('C*',`. Items are separated by commas
# (a comment may follow each), F#'s semicolons or MATLAB's spaces.
_CODE_CHAR = (
    r"(?:b?'(?:\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\[0-7]{1,3}|\\.|[^'\\\n])'|\?[!-~]"
    r"|(?:\(char\)[ \t]*)?(?:0[xX][2-7][0-9a-fA-F]|0[oO]?[0-7]{2,3}|0[bB][01]{6,7}"
    r"|3[2-9]|[4-9][0-9]|1[01][0-9]|12[0-6])(?:u8|i8)?)"
)
_CODE_END = r"(?:0[xX]00|'\\0'|0)"
_CODE_SEP = r"(?:[ \t]*[,;][ \t]*(?:(?://|#|--)[^\n]*)?\s*|[ \t]+)"
_CODE_LIST = re2.compile(
    rf"""(?:[(\[{{]\|?|\bpack\(\s*["'][CcUW]\*["'][ \t]*,)\s*"""
    rf"({_CODE_CHAR}(?:{_CODE_SEP}{_CODE_CHAR}){{7,}}(?:{_CODE_SEP}{_CODE_END})?)"
    rf"[ \t]*[,;]?[ \t]*(?:(?://|#|--)[^\n]*)?\s*\|?[)\]}}]".encode()
)
_CODE_ITEM = re.compile(rf"{_CODE_CHAR}|{_CODE_END}")
_ITEM_COMMENT = re.compile(r"(?<=[,;])[ \t]*(?://|#|--)[^\n]*")  # a comment after an item: not items
# The text before a list that names it: up to the assignment's operator (`STORE_PASS =`,
# `PASSWORD = ''.join(map(chr, [` -> `PASSWORD =`), else what stands before its opening bracket.
_ASSIGNED = re.compile(r"^.*?(?:[^=!<>]=|:=|=>)(?!=)")
_ANNOTATION = re.compile(r"[ \t]*:[^=:\n]*(?==\Z)")
_LIST_OPENER = re.compile(r"(?:(?:new\s+)?[\w.$]*(?:\[\])?[ \t]*[(\[{][ \t]*)+\Z")


@dataclass(frozen=True)
class Spelled:
    """A list of character codes (`start`, `end`: the list's items) and the string it spells, with the
    text that names it (`head`: `private static final char[] STORE_PASS =`)."""

    start: int
    end: int
    text: str
    head: str


def spelled_runs(text: str) -> list[Spelled]:
    """The lists of character codes or literals in `text` that spell printable ASCII."""
    out = []
    for start, end in _spans(_CODE_LIST, text):
        items = _ITEM_COMMENT.sub(lambda m: " " * len(m.group()), text[start:end])  # `0x67, // 'g'`
        chars = [_code_char(item) for item in _CODE_ITEM.findall(items)]
        if chars and chars[-1] == "\0":
            chars.pop()  # a C string's terminator
        word = "".join(chars)
        if len(word) != len(chars) or not all(32 <= ord(c) < 127 for c in word):
            continue
        out.append(Spelled(start, end, word, _head(text[max(0, start - 400) : start].rstrip())))
    return out


def _head(before: str) -> str:
    """What names a list, from the text before it: its line up to the assignment, without a type
    (`const DB_PASSWORD: [u8; 12] =` -> `const DB_PASSWORD =`); the line above when the list's line
    holds only its opening (`DB_PASSWORD = bytes(` then `    [72, ...`)."""
    lines = before.split("\n")[-2:]
    for line in (lines[-1], " ".join(lines)):
        assigned = _ASSIGNED.match(line)
        head = assigned.group(0) if assigned else _LIST_OPENER.sub("", line)
        if head.strip():
            return _ANNOTATION.sub("", head)
    return ""


def _code_char(item: str) -> str:
    if item.startswith("?"):
        return item[1]
    if item.endswith("'"):
        return unescape_value(item[item.index("'") + 1 : -1])
    number = item.rsplit(")", 1)[-1].strip().removesuffix("u8").removesuffix("i8")
    if len(number) > 1 and number[0] == "0" and number[1].isdigit():
        return chr(int(number, 8))  # C's octal `0110`
    return chr(int(number, 0))


# One escape in a string literal: a character's code (hex, `\\u`, `\\u{...}`, `\\x{...}`, octal, a Unicode
# name, an HTML character reference) or a simple escape.
_VALUE_ESCAPE = re.compile(
    r"\\(?:x(?P<x>[0-9A-Fa-f]{2})|[ux]\{(?P<b>[0-9A-Fa-f]{1,6})\}|u(?P<u>[0-9A-Fa-f]{4})"
    r"|U(?P<w>[0-9A-Fa-f]{8})|N\{(?P<n>[A-Z0-9 -]{2,80})\}|(?P<o>[0-7]{1,3})|(?P<c>[\\\"'/`nrt]))"
    r"|&#(?P<d>[0-9]{2,7});|&#[xX](?P<h>[0-9A-Fa-f]{2,6});"
)
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t"}


def unescape_value(value: str) -> str:
    """A literal's value as the characters its escapes stand for: `Tr0ub4dor\\/x` (PHP's json_encode),
    `Caf\\u00e9...` (Python's json.dump), `\\x48\\x65...`, Perl's `\\x{48}`, Python's `\\N{...}`, HTML's
    `&#x48;` and `&#72;`. Any other backslash stays as written (a raw string's `Dom\\user`)."""

    def one(m: re.Match[str]) -> str:
        c = m.group("c")
        if c is not None:
            return _SIMPLE.get(c, c)
        if m.group("n") is not None:
            try:
                return unicodedata.lookup(m.group("n"))
            except KeyError:
                return m.group(0)
        octal, decimal = m.group("o"), m.group("d")
        n = (
            int(octal, 8)
            if octal is not None
            else int(decimal)
            if decimal is not None
            else int(m.group("x") or m.group("u") or m.group("b") or m.group("w") or m.group("h"), 16)
        )
        return chr(n) if n < 0x110000 else m.group(0)

    return _VALUE_ESCAPE.sub(one, value)


def is_credential_pair(decoded: str) -> bool:
    """Decoded base64 that is a `user:password` pair (HTTP Basic, docker and npm `auth`)."""
    return bool(_PAIR.match(decoded))
