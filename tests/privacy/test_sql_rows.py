"""Values of SQL dumps and seed files under secret-named columns (codectx/privacy/sqlrows.py).

The second red team's seed file sent `api_token` values in clear: the name is only in the column
list (or, for mysqldump, only in the `CREATE TABLE` above), and a request that sends rows from the
middle of a dump scans them without that header. Both are read here through the real redactor and
the piece redactor a request uses.
"""

from __future__ import annotations

import time

import pytest

from codectx.privacy import sqlrows, sqlvalues
from codectx.privacy.errors import ScanTimeout
from codectx.privacy.pieces import PieceRedactor
from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"
TOKEN = "tok_22332298e7b3eda9322a0b8581b561d4"
MYSQL_TABLE = (
    "CREATE TABLE `users` (\n  `id` int NOT NULL AUTO_INCREMENT,\n  `email` varchar(255) DEFAULT NULL,\n"
    "  `api_token` varchar(64) DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `email` (`email`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n"
)


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


def _token(i: int) -> str:
    return f"tok_{i:05d}98e7b3eda9322a0b8581b561d4"


SECRETS = [
    (
        "db/dump.sql",
        "INSERT INTO public.users (id, email, api_token, password) VALUES "
        f"(1, 'admin@acme.com', '{TOKEN}', 'x');\n",
        TOKEN,
    ),
    (
        "db/seed.sql",
        "insert into `accounts` (`id`, `name`, `password`) values\n"
        "  (1, 'alice', 'Parsnipcrumble'),\n  (2, 'bob', 'QuinceLantern');\n",
        "QuinceLantern",
    ),
    (
        "db/dump.sql",
        f"COPY public.accounts (id, username, api_key) FROM stdin;\n1\talice\t{TOKEN}\n\\.\n",
        TOKEN,
    ),
    # mysqldump writes no column list: the names are in the CREATE TABLE.
    (
        "db/dump.sql",
        MYSQL_TABLE + f"INSERT INTO `users` VALUES (1,'a@b.c','{TOKEN}'),(2,'c@d.e',NULL);\n",
        TOKEN,
    ),
    # A value with both quotes cannot be judged as one literal: masked whole.
    (
        "db/seed.sql",
        "INSERT INTO t (id, secret) VALUES (1, 'a\"b''c-Zq7Xr2Vb9Kp4');\n",
        "a\"b''c-Zq7Xr2Vb9Kp4",
    ),
]


@pytest.mark.parametrize(("path", "text", "secret"), SECRETS)
def test_secret_columns_are_redacted(redactor: Redactor, path: str, text: str, secret: str) -> None:
    assert secret not in redactor.redact(text, path).text


LOOK_ALIKES = [
    ("db/schema.sql", "CREATE TABLE users (id integer, password text);\n"),
    ("db/schema.sql", "ALTER TABLE users ADD COLUMN password VARCHAR(255) NOT NULL;\n"),
    ("db/seed.sql", "INSERT INTO settings (name, value) VALUES ('site_title', 'Quince Lantern Shop');\n"),
    # A secret column's value that no assignment rule would take: NULL, a placeholder, a hash.
    ("db/seed.sql", "INSERT INTO t (id, token) VALUES (1, NULL), (2, 'changeme');\n"),
    ("db/dump.sql", "COPY users (id, password_hash) FROM stdin;\n1\tpbkdf2_sha256$600000$abc$def\n\\.\n"),
    # Columns that are not secret keep their values, in a table that has a secret column.
    ("db/dump.sql", MYSQL_TABLE + "INSERT INTO `users` VALUES (1,'Quince Lantern Shop',NULL);\n"),
    # Python code that inserts into a list is no statement.
    ("app/queue.py", "tokens.insert(0, 'Quince Lantern Shop')\n"),
]


@pytest.mark.parametrize(("path", "text"), LOOK_ALIKES)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text


def _middle(text: str, first: int, count: int) -> tuple[int, int]:
    lines = text.split("\n")
    a = sum(len(line) + 1 for line in lines[:first])
    return a, a + sum(len(line) + 1 for line in lines[first : first + count])


def _leaked(out: str, n: int) -> list[int]:
    return [i for i in range(n) if _token(i) in out]


def test_rows_from_the_middle_of_a_copy_block_are_read_under_its_header(redactor: Redactor) -> None:
    rows = "\n".join(f"{i}\tuser{i}\t{_token(i)}" for i in range(200))
    dump = f"-- data\nCOPY public.accounts (id, username, api_key) FROM stdin;\n{rows}\n\\.\n"
    out = PieceRedactor(redactor).document(dump, "db/dump.sql", [_middle(dump, 100, 10)])[0]
    assert "user105" in out  # the other columns are sent as they are
    assert not _leaked(out, 200)


def test_tuples_from_the_middle_of_a_multi_row_insert_are_read_under_its_header(redactor: Redactor) -> None:
    rows = ",\n".join(f"  ({i}, 'user{i}', '{_token(i)}')" for i in range(200))
    seed = f"INSERT INTO users (id, name, api_token) VALUES\n{rows};\n"
    out = PieceRedactor(redactor).document(seed, "db/seed.sql", [_middle(seed, 100, 10)])[0]
    assert "'user105'" in out
    assert not _leaked(out, 200)


def test_column_less_inserts_far_below_their_create_table(redactor: Redactor) -> None:
    rows = "".join(f"INSERT INTO `users` VALUES ({i},'a{i}@b.c','{_token(i)}');\n" for i in range(100))
    dump = MYSQL_TABLE + "\n" * 40 + rows
    out = PieceRedactor(redactor).document(dump, "db/dump.sql", [_middle(dump, 90, 5)])[0]
    assert "a45@b.c" in out
    assert not _leaked(out, 100)


def test_a_chunk_after_the_statement_ended_gets_no_header() -> None:
    dump = "COPY t (id, token) FROM stdin;\n1\tx\n\\.\n" + "\n" * 20 + "select 1;\n2\tnot-a-row\n"
    lo = dump.index("select")
    assert sqlrows.lead(dump, lo, len(dump)) == ""
    seed = "INSERT INTO t (id, token) VALUES (1, 'a');\n" + "\n" * 20 + "(2, 'b')\n"
    assert sqlrows.lead(seed, seed.index("(2"), len(seed)) == ""


def test_a_long_dump_is_read_within_the_deadline() -> None:
    rows = "\n".join(f"{i}\t{_token(i)}" for i in range(3 * sqlvalues.CHECK_EVERY))
    dump = f"COPY t (id, token) FROM stdin;\n{rows}\n\\.\n"
    assert len(list(sqlrows.secret_cells(dump))) == 3 * sqlvalues.CHECK_EVERY
    with pytest.raises(ScanTimeout):
        list(sqlrows.secret_cells(dump, deadline=time.monotonic() - 1))


def test_each_row_is_read_once_whatever_the_headers() -> None:
    # Repeated headers (the review's 18 KB case) and rows end each statement where the next starts.
    text = "COPY t (id, token) FROM stdin;\n1\tabc\n" * 500
    assert [text[c.start : c.end] for c in sqlrows.secret_cells(text)] == ["abc"] * 500


PW = "Saddleharborparsnip7"
# Red team 4's dialects and shapes (values our own).
DIALECTS = [
    # SQL Server's generated scripts: no INTO, bracketed names, N'' strings.
    ("db/s.sql", f"INSERT [dbo].[Users] ([Id], [Email], [Password]) VALUES (1, N'a@b.c', N'{PW}')\nGO\n", PW),
    # mysqldump --replace, columns in the CREATE TABLE.
    ("db/d.sql", MYSQL_TABLE + f"REPLACE INTO `users` VALUES (1,'a@b.c','{TOKEN}');\n", TOKEN),
    # COPY without a column list, and COPY ... WITH (FORMAT csv).
    (
        "db/d.sql",
        "CREATE TABLE public.users (\n    id integer,\n    email text,\n    api_token text\n);\n"
        f"COPY public.users FROM stdin;\n1\ta@b.c\t{TOKEN}\n\\.\n",
        TOKEN,
    ),
    (
        "db/d.sql",
        f"COPY users (id, email, api_token) FROM stdin WITH (FORMAT csv);\n1,a@b.c,{TOKEN}\n\\.\n",
        TOKEN,
    ),
    # A comment between rows, a value inside a call, an array before the secret column.
    ("db/s.sql", f"INSERT INTO users (id, pw) VALUES\n  (1, 'x'),\n  -- admin\n  (2, '{PW}');\n", PW),
    ("db/s.sql", f"INSERT INTO users (id, password) VALUES (1, crypt('{PW}', gen_salt('bf')));\n", PW),
    ("db/s.sql", f"INSERT INTO users (id, roles, password) VALUES (1, ARRAY['admin','ops'], '{PW}');\n", PW),
]


@pytest.mark.parametrize(("path", "text", "secret"), DIALECTS)
def test_dialects_and_shapes(redactor: Redactor, path: str, text: str, secret: str) -> None:
    assert secret not in redactor.redact(text, path).text


def test_many_replace_calls_above_a_region_are_looked_through_once() -> None:
    code = 's = s.replace("a", "b")\n' * 2000 + "(1, 2)\n"
    assert sqlrows.lead(code, code.index("(1, 2)"), len(code)) == ""


def test_a_one_column_copys_rows_get_their_header(redactor: Redactor) -> None:
    rows = "".join(f"{_token(i)}\n" for i in range(100))
    dump = f"COPY public.tokens (api_token) FROM stdin;\n{rows}\\.\n"
    at = dump.index(_token(50))
    out = PieceRedactor(redactor).document(dump, "db/d.sql", [(at, at + 100)])[0]
    assert not _leaked(out, 100)


def test_a_tuple_opened_on_its_headers_line(redactor: Redactor) -> None:
    text = (
        "INSERT INTO t ("
        + ", ".join(f"c{i}" for i in range(12))
        + ", password) VALUES (\n"
        + "".join(f"  'v{i}',\n" for i in range(12))
        + f"  '{PW}');\n"
    )
    at = text.index(f"  '{PW}'")
    assert PW not in PieceRedactor(redactor).document(text, "db/s.sql", [(at, len(text))])[0]


def test_a_statement_ends_at_on_conflict(redactor: Redactor) -> None:
    text = (
        "INSERT INTO users (name, password) VALUES ('a', 'x') ON CONFLICT DO NOTHING;\n"
        + "\n" * 10
        + "-- fixtures for the parser tests\n(2, 'Zq7Xr2Vb9Kp4Wm')\n"
    )
    at = text.index("(2,")
    assert "Zq7Xr2Vb9Kp4Wm" in PieceRedactor(redactor).document(text, "db/s.sql", [(at, len(text))])[0]


def test_a_column_added_by_alter_table(redactor: Redactor) -> None:
    """Red team 4: `ALTER TABLE users ADD COLUMN api_token` before a column-less INSERT."""
    schema = "CREATE TABLE users (id int, email text);\nALTER TABLE users ADD COLUMN api_token text;\n"
    rows = "".join(f"INSERT INTO users VALUES ({i}, 'u{i}@x.io', '{_token(i)}');\n" for i in range(60))
    dump = schema + "\n" * 20 + rows
    assert not _leaked(redactor.redact(dump, "db/seed.sql").text, 60)
    at = dump.index(f"({40},")
    out = PieceRedactor(redactor).document(dump, "db/seed.sql", [(at, at + 200)])[0]
    assert "u40@x.io" in out and not _leaked(out, 60)
