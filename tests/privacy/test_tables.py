"""Cells of tables under secret-named columns (codectx/privacy/tables.py): CSV and TSV files,
Markdown and HTML tables, through the real redactor and the piece redactor a request uses.

Red team 3 sent a password from a notebook's HTML output (`<td>` under a `password` header); a
users.csv or a Markdown table of staging logins names its secret only in the header row, which a
request that sends rows from far below it does not hold.
"""

from __future__ import annotations

import json
import time

import pytest

from codectx.privacy import tables
from codectx.privacy.errors import ScanTimeout
from codectx.privacy.pieces import PieceRedactor
from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


def _pw(i: int) -> str:
    return f"Pw{i:03d}xQ7rLm2v"


def _leaked(out: str, n: int) -> list[int]:
    return [i for i in range(n) if _pw(i) in out]


CSV = "id,email,password,created\n" + "".join(f"{i},u{i}@x.io,{_pw(i)},2024-01-01\n" for i in range(300))
MARKDOWN = (
    "# Staging\n\n| service | user | password |\n|---|---|---|\n"
    + "".join(f"| svc{i} | admin | `{_pw(i)}` |\n" for i in range(100))
    + "\nText after the table.\n"
)


def test_a_csv_files_secret_column(redactor: Redactor) -> None:
    out = redactor.redact(CSV, "data/users.csv").text
    assert not _leaked(out, 300)
    assert "u7@x.io" in out and "2024-01-01" in out  # the other columns are sent


def test_csv_rows_far_below_the_header(redactor: Redactor) -> None:
    a, b = CSV.index("\n150,") + 1, CSV.index("\n160,") + 1
    out = PieceRedactor(redactor).document(CSV, "data/users.csv", [(a, b)])[0]
    assert "u155@x.io" in out
    assert not _leaked(out, 300)


def test_a_markdown_tables_secret_column(redactor: Redactor) -> None:
    assert not _leaked(redactor.redact(MARKDOWN, "docs/staging.md").text, 100)
    a, b = MARKDOWN.index("| svc50 "), MARKDOWN.index("| svc55 ")
    out = PieceRedactor(redactor).document(MARKDOWN, "docs/staging.md", [(a, b)])[0]
    assert "svc52" in out and not _leaked(out, 100)


def test_a_notebooks_html_output(redactor: Redactor) -> None:
    html = [
        "<table><tr><th>user</th><th>password</th></tr>",
        f"<tr><td>admin</td><td>{_pw(1)}</td></tr></table>",
    ]
    output = {"output_type": "execute_result", "data": {"text/html": html}, "metadata": {}}
    notebook = json.dumps({"cells": [{"cell_type": "code", "source": ["df"], "outputs": [output]}]}, indent=1)
    out = redactor.redact(notebook, "notebooks/users.ipynb").text
    assert _pw(1) not in out and "admin" in out


LOOK_ALIKES = [
    (
        "docs/api.md",
        "| option | type | description |\n|---|---|---|\n| password | string | The user's password |\n",
    ),
    ("docs/api.md", "| field | password |\n|---|---|\n| required | yes |\n| min length | 12 |\n"),
    ("data/stats.csv", "name,password_policy,token_count\nalice,strict,42\nbob,lenient,7\n"),
    ("web/t.html", "<table><tr><th>Name</th><th>Token</th></tr><tr><td>a</td><td>n/a</td></tr></table>"),
    # A secret column's hashes: judged as assignments, a placeholder stays.
    ("data/users.csv", "user,password\nalice,changeme\n"),
    # Links in a credential column (a library's README lists its credential classes).
    (
        "docs/README.md",
        "| credential | usage |\n|---|---|\n"
        "| [`ClientSecretCredential`](https://learn.example.com/x) | apps |\n"
        "| https://learn.example.com/ClientSecretCredential7 | apps |\n",
    ),
]


@pytest.mark.parametrize(("path", "text"), LOOK_ALIKES)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


def test_a_long_table_is_read_within_the_deadline() -> None:
    assert len(list(tables.secret_cells(CSV, "data/users.csv"))) == 300
    with pytest.raises(ScanTimeout):
        list(tables.secret_cells(CSV, "data/users.csv", deadline=time.monotonic() - 1))


PW = "Ribbonharbormeadow"
TOKEN = "tok_08c969d75a35a6a59f63442a8df250f4"
# Red team 4's shapes (values our own): real exports and valid tables the first readers missed.
SHAPES = [
    ("data/u.csv", f"id,email,password\r\n1,a@b.c,x\r\n2,c@d.e,{PW}\r\n", PW),  # Excel's CRLF
    ("data/u.csv", f"ID,Name,API Key\n1,acme,{TOKEN}\n", TOKEN),  # a header with spaces
    ("exports/users.txt", f"id,email,password\n1,a@b.c,{PW}\n", PW),  # an export named .txt
    ("data/u.csv", f"id\temail\tpassword\n1\ta@b.c\t{PW}\n", PW),  # tabs in a .csv
    ("data/u.csv", f"id;email;password\n1;a@b.c;{PW}\n", PW),  # semicolons (European Excel)
    ("data/u.csv", f"#,user,password\n1,bob,{PW}\n", PW),  # a row-number column named `#`
    ("docs/a.md", f"| user | password |\n|  ---  |  ---  |\n| admin | {PW} |\n", PW),  # a padded delimiter
    ("docs/a.md", f"| user | password |\n|--|--|\n| admin | {PW} |\n", PW),  # GFM's short delimiter
    ("docs/a.md", f"| user | password |\n|:-|:-|\n| admin | {PW} |\n", PW),
    ("docs/a.md", f"user | password\n-- | --\nadmin | {PW}\n", PW),  # no outer pipes
    (
        "a.html",
        f"<table><tr><td><b>User</b></td><td><b>Password</b></td></tr><tr><td>admin</td><td>{PW}</td></tr></table>",
        PW,
    ),
    (
        "a.html",
        '<table><tr><th colspan="2">Name</th><th>Password</th></tr>'
        f"<tr><td>a</td><td>b</td><td>{PW}</td></tr>",
        PW,
    ),
    (
        "a.html",
        f"<table><tr><th>User</th><th>Password</th></tr><tr><td>x</td><td><span><code>{PW}</code></span></td></tr>",
        PW,
    ),
    ("a.html", f'<table><tr><th scope="row">Password</th><td>{PW}</td></tr></table>', PW),  # vertical
]


@pytest.mark.parametrize(("path", "text", "secret"), SHAPES)
def test_real_world_table_shapes(redactor: Redactor, path: str, text: str, secret: str) -> None:
    assert secret not in redactor.redact(text, path).text


def test_rows_without_whole_cells_do_not_stop_the_scan(redactor: Redactor) -> None:
    # A minified bundle holding `<tr>` in strings and cells left open: read, not an error.
    text = 'const a = "<tr>"; const b = "<tr><td>x"; ' * 50 + "<table><tr><td>open cell"
    assert redactor.redact(text, "dist/bundle.js").text == text


NOT_TABLES = [
    ("notes.txt", "Remember: password, token, key rotation\nWe rotate every quarter, see the runbook.\n"),
    ("requirements.txt", "numpy>=1.0\nrequests==2.31\n"),
    # A first row that is data (a number in it) is no header.
    (
        "a.html",
        "<table><tr><td>token count</td><td>42</td></tr><tr><td>tokens</td><td>Zq7Xr2Vb9Kp4Wm6T</td></tr>",
    ),
]


@pytest.mark.parametrize(("path", "text"), NOT_TABLES)
def test_what_is_no_table_stays(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


def test_regions_that_start_at_a_delimiter_row_or_below_a_notebooks_header(redactor: Redactor) -> None:
    """Review: a region starting at a Markdown delimiter row got no header; pandas' HTML starts
    every body row with an index `<th>`, which the header lookup took for the header."""
    md = "# Logins\n\n| user | password |\n|------|----------|\n" + f"| bob | {PW} |\n"
    at = md.index("|------")
    assert PW not in PieceRedactor(redactor).document(md, "docs/a.md", [(at, len(md))])[0]
    rows = "".join(
        f"    <tr>\n      <th>{i}</th>\n      <td>u{i}</td>\n"
        f"      <td>{PW if i == 30 else 'n/a'}</td>\n    </tr>\n"
        for i in range(60)
    )
    html = (
        '<table class="dataframe">\n  <thead>\n    <tr>\n      <th></th>\n      <th>user</th>\n'
        f"      <th>password</th>\n    </tr>\n  </thead>\n  <tbody>\n{rows}  </tbody>\n</table>\n"
    )
    at = html.index(PW)
    out = PieceRedactor(redactor).document(html, "out/frame.html", [(at, at + len(PW))])[0]
    assert PW not in out
    # A comment line above a CSV's header, and Excel's `sep=;` line.
    csv = "# exported 2024-05-01\nsep=;\nid;email;password\n" + "".join(
        f"{i};u{i}@x.io;{PW}{i}\n" for i in range(50)
    )
    at = csv.index("\n40;") + 1
    out = PieceRedactor(redactor).document(csv, "data/u.csv", [(at, len(csv))])[0]
    assert PW not in out and "u45@x.io" in out


def test_a_quoted_csv_field_over_two_lines(redactor: Redactor) -> None:
    """Red team 4: a note with a line break (RFC 4180) before the password column."""
    text = f'id,note,password\n1,"line one\nline, two",{PW}\n2,plain,{PW}x\n'
    out = redactor.redact(text, "db/load.csv").text
    assert PW not in out and "line, two" in out
