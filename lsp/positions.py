"""LSP positions (UTF-16 code units by default) ↔ Python string indexes (code points).

Everything inside codectx works on code points; only the protocol edge
converts, using the encoding negotiated at initialize.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types


def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(ch) > 0xFFFF else 1


@dataclass(frozen=True)
class Codec:
    encoding: str = "utf-16"

    @classmethod
    def of(cls, encoding: object) -> Codec:
        value = getattr(encoding, "value", encoding)
        return cls(value if value in ("utf-8", "utf-16", "utf-32") else "utf-16")

    def to_index(self, line_text: str, character: int) -> int:
        """The code-point column of a client column (clamped to the line)."""
        if self.encoding == "utf-32":
            return max(0, min(character, len(line_text)))
        units = 0
        for i, ch in enumerate(line_text):
            if units >= character:
                return i
            units += _units(ch, self.encoding)
        return len(line_text)

    def to_client(self, line_text: str, index: int) -> int:
        if self.encoding == "utf-32":
            return index
        return sum(_units(ch, self.encoding) for ch in line_text[:index])


def split_lines(text: str) -> list[str]:
    """Lines without their terminators, as LSP counts them (a trailing newline opens an empty line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def clamp(text_lines: list[str], position: types.Position, codec: Codec) -> tuple[int, int]:
    """(line, code-point column) of a client position, clamped into the document."""
    line = max(0, min(position.line, len(text_lines) - 1))
    column = (
        codec.to_index(text_lines[line], position.character)
        if position.line <= line
        else len(text_lines[line])
    )
    return line, column


def offset(text_lines: list[str], line: int, column: int) -> int:
    """Code-point offset in the text joined with '\\n'."""
    return sum(len(x) + 1 for x in text_lines[:line]) + column


def client_position(text_lines: list[str], line: int, column: int, codec: Codec) -> types.Position:
    return types.Position(line=line, character=codec.to_client(text_lines[line], column))
