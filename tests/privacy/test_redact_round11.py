"""Red team 11's limits, cuts, encodings and state: the right rule existed, but the redactor never
saw the whole secret (a view's cap, a table's header rule, line ends other than LF, Unicode spaces
around the operator, a chunk whose file was decoded otherwise, changed or too large). Each
positive went out in clear before the change (values here are our own).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from codectx.backend.prompts import Snippet

from codectx.app.index import ContextPiece
from codectx.app.redaction import redact_items, source_reader
from codectx.privacy.pieces import PieceRedactor
from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"
PW = "Kestrel4Basin"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


def _masked(redactor: Redactor, text: str, path: str, *secrets: str) -> str:
    out = redactor.redact(text, path).text
    for secret in secrets or (PW,):
        assert secret not in out, out[-400:]
    return out


def test_every_line_of_a_long_json_file_is_read_unescaped(redactor: Redactor) -> None:
    """F1: the view that reads `\\"` as `"` stopped after 64 such lines."""
    lines = [f'  "step{i}": "echo \\"hello {i}\\"",' for i in range(80)]
    lines.append(f'  "setup": "export DB_PASSWORD=\\"{PW}\\""')
    _masked(redactor, "{\n" + "\n".join(lines) + "\n}\n", "tasks.json")


@pytest.mark.parametrize(
    "header",
    [
        ",email,password",  # pandas' to_csv() with its index column
        "id,email,password,",  # a trailing delimiter
        "id,email,password,notes about this account that the export tool wrote as a header",
    ],
)
def test_a_csv_header_with_an_empty_or_long_cell_still_names_its_columns(
    redactor: Redactor, header: str
) -> None:
    """F2: one empty or long header cell turned the whole table off."""
    rows = "".join(f"{i},user{i}@example.org,{PW}{i}\n" for i in range(5))
    _masked(redactor, f"{header}\n{rows}", "users.csv", *(f"{PW}{i}" for i in range(5)))


def test_a_quote_inside_a_field_opens_nothing(redactor: Redactor) -> None:
    """The review of stop 57: a quote inside an unquoted field (`5" screen`) was read as opening a
    quoted field, which ran on over the rows below it."""
    device = {2: 'tablet 5" screen', 900: 'phone 6" screen'}
    rows = [f"{i},{device.get(i, 'laptop')},{PW}{i}" for i in range(1100)]
    out = _masked(
        redactor, "id,device,password\n" + "\n".join(rows) + "\n", "devices.csv", f"{PW}3", f"{PW}899"
    )
    assert 'tablet 5" screen' in out


def test_a_long_quoted_field_does_not_unalign_the_rows_after_it(redactor: Redactor) -> None:
    """F2: a quoted field over 64 lines ended the record early; the rows after it were misread."""
    note = '"' + "\n".join(f"line {i} of a long note" for i in range(100)) + '"'
    text = f"id,note,password\n1,{note},{PW}1\n2,short,{PW}2\n3,short,{PW}3\n"
    _masked(redactor, text, "users.csv", f"{PW}1", f"{PW}2", f"{PW}3")
    stray = f'id,note,password\n1,"a stray quote,{PW}1\n2,short,{PW}2\n3,short,{PW}3\n'
    _masked(redactor, stray, "users.csv", f"{PW}2", f"{PW}3")


@pytest.mark.parametrize(
    "path,text",
    [
        ("users.csv", f"id,email,password\r1,a@example.org,{PW}\r2,b@example.org,{PW}x\r"),
        ("README.md", f"| user | password |\r|---|---|\r| admin | {PW} |\r"),
        ("c.ini", f"[db]\rhost = db\rpassword =\r  {PW}\r"),
    ],
)
def test_line_ends_other_than_lf_are_line_ends(redactor: Redactor, path: str, text: str) -> None:
    """F3: with classic Mac line ends (a lone CR) no table was read as one."""
    out = _masked(redactor, text, path)
    assert len(out.split("\r")) == len(text.split("\r"))  # the file's own line ends are kept


@pytest.mark.parametrize(
    "path,text",
    [
        ("c.ini", f"[db]\npassword\u00a0=\u00a0{PW}\n"),
        ("c.ini", f"[db]\npassword\u3000=\u3000{PW}\n"),
        ("c.cfg", f"[db]\npassword\u202f=\u202f{PW}\n"),
        ("notes.md", f"staging password\u00a0: {PW}\n"),
        ("notes.md", f"db password\uff1a{PW}\n"),
        ("c.env", f"DB_PASSWORD\uff1d{PW}\n"),
    ],
)
def test_unicode_spaces_and_fullwidth_operators_count(redactor: Redactor, path: str, text: str) -> None:
    """F4: Python's configparser reads `password\\u00a0=\\u00a0X` as `password = X`; the rules did not."""
    out = _masked(redactor, text, path)
    assert out.count("\n") == text.count("\n") and ("\u00a0" in out) == ("\u00a0" in text)


@pytest.mark.parametrize("encoding", ["cp1252", "utf-16"])
def test_a_chunk_of_a_file_in_another_encoding_is_found_in_its_file(
    tmp_path: Path, redactor: Redactor, encoding: str
) -> None:
    """F5: the file was read otherwise than the indexer read it, so its chunk was not found there and
    was judged alone: a dump's rows lost their INSERT line."""
    from codectx.indexer.walk.content import decode_source

    rows = ",\n".join(f"({i}, 'Jürgen {i}', 'u{i}@example.org', '{PW}{i}')" for i in range(60))
    sql = f"-- seed\nINSERT INTO users (id, name, email, password) VALUES\n{rows};\n"
    (tmp_path / "seed.sql").write_bytes(sql.encode(encoding))
    indexed = decode_source((tmp_path / "seed.sql").read_bytes())  # as the indexer reads it
    lines = indexed.split("\n")
    chunk = "\n".join(lines[40:50])
    items: list[ContextPiece] = [Snippet("seed.sql", 40, 49, chunk)]
    (out,) = redact_items(PieceRedactor(redactor), items, source_reader(tmp_path))
    assert "u40@example.org" in out.text and f"{PW}40" not in out.text and f"{PW}45" not in out.text


def test_a_chunk_far_down_a_large_dump_is_read_with_its_header(redactor: Redactor) -> None:
    """F6: a header more than 5 MB above a chunk was out of reach (a workspace may index 10 MB files)."""
    rows = ",\n".join(f"({i}, 'user{i}@example.org', 'Pw{i:06d}Zq64x')" for i in range(200_000))
    source = f"INSERT INTO users (id, email, password) VALUES\n{rows};\n"
    assert len(source) > 6_000_000
    start = 190_001
    chunk = "\n".join(source.split("\n")[start : start + 5])
    out = PieceRedactor(redactor).chunk(chunk, "db/dump.sql", start, source)
    assert "user190000@example.org" in out and "Pw190000Zq64x" not in out and "Pw190003Zq64x" not in out
