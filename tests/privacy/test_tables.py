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
