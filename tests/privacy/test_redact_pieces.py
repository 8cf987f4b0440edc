"""Piece redaction: secrets across cuts are masked whole, typing is probed, code without secrets is untouched.

`PieceRedactor` redacts the parts of one request (prefix, suffix, selection, scope, retrieved
chunks) with their own path, finding secrets in the original text around each cut.
"""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

import pytest
from codectx.backend.prompts import Snippet, fit_prompt

from codectx.app.completion import CompletionAsk
from codectx.app.redaction import cursor_offset, redact_around_cursor, redact_items
from codectx.privacy.pieces import PieceRedactor
from codectx.privacy.redact import TOKEN_PREFIX, Redactor

KEY = b"piece-test-key-piece-test-key-32"
GH = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
PASSWORD = "Hunter2!Orchid_7319"


@pytest.fixture
def pieces() -> PieceRedactor:
    return PieceRedactor(Redactor(key=KEY))


def test_a_cursor_inside_a_secret_masks_both_halves(pieces: PieceRedactor) -> None:
    doc = f'import os\n\nTOKEN = "{GH}"\nx = 1\n'
    for cut in range(doc.index(GH) + 1, doc.index(GH) + len(GH)):
        pr = PieceRedactor(Redactor(key=KEY))
        before, after = pr.document(doc, "app/settings.py", [(0, cut), (cut, len(doc))], cursor=cut)
        assert TOKEN_PREFIX in before and TOKEN_PREFIX in after, cut
        for i in range(len(GH) - 3):
            assert GH[i : i + 4] not in before + after
        assert before.startswith('import os\n\nTOKEN = "') and after.endswith('"\nx = 1\n')


def test_a_selection_edge_inside_a_secret_masks_it_in_selection_and_scope(pieces: PieceRedactor) -> None:
    doc = f'def connect():\n    password = "{PASSWORD}"\n    return password\n'
    middle = doc.index(PASSWORD) + 6
    selection, scope = pieces.document(doc, "db.py", [(middle, len(doc)), (0, len(doc))])
    assert PASSWORD[6:] not in selection and PASSWORD not in scope
    assert selection.startswith(TOKEN_PREFIX) and scope.count(TOKEN_PREFIX) == 1
    # Each token maps back to the exact text it replaced (for putting edits back together).
    originals = set(pieces.placeholders.originals.values())
    assert PASSWORD in originals and PASSWORD[6:] in originals


def test_a_bare_ini_value_is_caught_with_the_pieces_own_file_type(pieces: PieceRedactor) -> None:
    doc = "[db]\npassword = hunter2hunter\n"
    # The gate alone sees no file type, and a bare identifier-like value is prose there.
    assert Redactor(key=KEY).redact(doc[10:]).findings == []
    cut = doc.index("hunter2") + 3
    before, after = pieces.document(doc, "config/app.ini", [(0, cut), (cut, len(doc))], cursor=cut)
    assert "hun" not in before and "ter2hunter" not in after


@pytest.mark.parametrize(
    "line",
    [
        'password = "Hunter2!Orch',  # an unclosed string being typed
        'client = Client(api_key="sk_live_4eC39HqLyjWDarjtT1zdp7d',  # a provider prefix, half typed
        "TOKEN = ghp_aB3dE5fG7hJ9kL1",  # a bare token run at the cursor
    ],
)
def test_a_value_being_typed_is_masked_from_its_first_character(pieces: PieceRedactor, line: str) -> None:
    doc = f"import os\n{line}"
    typed = line.split("=", 1)[1].strip().strip('"').split('"')[-1]
    prefix, _ = pieces.document(doc, "app.py", [(0, len(doc)), (len(doc), len(doc))], cursor=len(doc))
    assert typed[:8] not in prefix, prefix
    assert prefix.startswith("import os\n")


TYPED = "Parsnipmeadowcrumb"


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        # Red team 4: a tuple's second row (the name is in the header two lines up), a table cell
        # whose row is not closed, a URL's password before its host.
        (
            "db/seed.sql",
            "INSERT INTO users (id, email, password) VALUES\n  (1, 'a@b.c', 'Xylophonequartz'),\n"
            f"  (2, 'c@d.e', '{TYPED}",
            "",
        ),
        (
            "web/a.html",
            f"<table>\n<tr><th>User</th><th>Password</th></tr>\n<tr><td>admin</td><td>{TYPED}",
            "\n",
        ),
        ("app/db.py", f'DSN = "postgres://app:{TYPED}', '"\n'),
        # The value on the line after a continuation or an opening parenthesis.
        ("app/settings.py", f'DB_PASSWORD = \\\n    "{TYPED}', '"\n'),
        ("app/settings.py", f'DB_PASSWORD = (\n    "{TYPED}', '"\n)\n'),
    ],
)
def test_a_value_typed_where_its_name_is_far_is_masked(
    pieces: PieceRedactor, path: str, before: str, after: str
) -> None:
    doc, cur = before + after, len(before)
    prefix, _ = pieces.document(doc, path, [(0, cur), (cur, len(doc))], cursor=cur)
    assert TYPED[:6] not in prefix, prefix


# Red team 6 (H1): each keystroke sent its prefix, and the first 5-7 characters of a password went
# out before the finished-value probe could tell (`"W"`, `"Wq"`, ... `"troubad"`).
KEYSTROKES = [
    ("mailer.py", 'import os\n\nsmtp_password = "', "Wq8zLmP3", '"\n'),
    ("app/settings.py", 'password = "', "troubadour", '"\n'),
    ("app/settings.py", 'DB = {\n  "password":\n     "', "gondolier", '"\n}\n'),
    (".env", "PASSWORD=", "Wq8zLmP3", "\n"),
    ("config/db.yml", "db:\n  password: ", "Wq8zLmP3", "\n"),
    ("app/db.py", 'conn = pymysql.connect("db", "app", "', "troubadour", '")\n'),
    # Review of stop 55: a passphrase typed word by word, punctuation inside a bare value.
    ("app/settings.py", 'password = "', "summit tundra ember", '"\n'),
    ("config/db.yml", "password: ", "summit tundra ember", "\n"),
    (".env", "PASSWORD=", "Wq:8zLm,P3", "\n"),
    # Red team 7 (L02): a password typed as a command's argument.
    ("deploy.sh", "ldapsearch -x -H ldap://dc1 -w ", "Tq9xVb2Lm4", " -b dc=corp\n"),
    ("deploy.sh", "lftp -u app,", "Tq9xVb2Lm4", " sftp://files.example\n"),
    ("deploy.sh", "echo ", "Tq9xVb2Lm4", " | sudo -S systemctl restart app\n"),
]


def _keystrokes(path: str, before: str, value: str, after: str) -> list[tuple[str, str, str]]:
    """(the text up to the cursor, the prefix sent, the suffix sent) after each key of `value`, each
    request redacted on its own as a completion's is."""
    out = []
    for n in range(1, len(value) + 1):
        doc, cur = before + value[:n] + after, len(before) + n
        prefix, suffix = PieceRedactor(Redactor(key=KEY)).document(
            doc, path, [(0, cur), (cur, len(doc))], cursor=cur
        )
        out.append((doc[:cur], prefix, suffix))
    return out


@pytest.mark.parametrize(("path", "before", "value", "after"), KEYSTROKES)
def test_a_password_typed_key_by_key_is_masked_from_the_first_key(
    path: str, before: str, value: str, after: str
) -> None:
    for _typed, prefix, suffix in _keystrokes(path, before, value, after):
        assert prefix.startswith(before) and prefix[len(before) :].startswith(TOKEN_PREFIX), prefix
        assert suffix == after


@pytest.mark.parametrize(
    ("before", "value", "after", "path"),
    [
        ('name = "', "hello", '"\n', "app.py"),
        ('x = {"type": "', "string", '"}\n', "app.py"),
        ('password_label = "', "Enter", '"\n', "app.py"),
        ('token_type = "', "bear", '"\n', "app.py"),
        ('password = os.environ["', "DB_PA", '"]\n', "app.py"),
        ("image: ", "nginx", "\n", "app.py"),
        # An expression after a password's name in code: completions must see it to complete it.
        ("password = ", "os.environ", "\n", "app.py"),
        ("config.password = ", "settings.DB_PASSWORD", "\n", "app.py"),
        # Type annotations and schema types after a password's name (review of stop 55).
        ("def login(username: str, password: ", "str", ")\n", "app.py"),
        ("interface User { password: ", "string", "; }\n", "app.ts"),
        ("function f(password: ", "string", ") {}\n", "app.ts"),
        ("  password: ", "String!", "\n", "schema.graphql"),
        ("  string password = ", "3", ";\n", "user.proto"),
        # A command's ordinary arguments.
        ("ssh -p ", "2222", " host\n", "deploy.sh"),
        ("docker run -p ", "8080:80", " nginx\n", "deploy.sh"),
        ("grep -r ", "password", " .\n", "deploy.sh"),
        # A word after "password" in prose is a word until it reads as a secret.
        ("Users can start the password ", "reset", " flow from the login page.\n", "README.md"),
    ],
)
def test_an_ordinary_value_typed_key_by_key_is_left_alone(
    before: str, value: str, after: str, path: str
) -> None:
    for typed, prefix, _suffix in _keystrokes(path, before, value, after):
        assert prefix == typed


def test_an_ordinary_string_being_typed_is_left_alone(pieces: PieceRedactor) -> None:
    doc = 'import os\nname = "hello_world_and_more'
    prefix, _ = pieces.document(doc, "app.py", [(0, len(doc)), (len(doc), len(doc))], cursor=len(doc))
    assert prefix == doc


def test_a_chunk_cut_inside_a_key_block_is_masked_with_the_file_around_it(pieces: PieceRedactor) -> None:
    body = "\n".join("MIIEowIBAAKCAQEAx" + "Q7rV2" * 9 + f"{i:02d}" for i in range(12))
    block = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    source = f"KEY = '''{block}'''\n\ndef f():\n    pass\n"
    rows = source.split("\n")
    chunk = "\n".join(rows[4:9])  # a chunk that starts and ends inside the block
    alone = PieceRedactor(Redactor(key=KEY)).text(chunk, "keys.py")
    around = pieces.chunk(chunk, "keys.py", 4, source)
    assert "Q7rV2Q7rV2" not in around and around.count("\n") == chunk.count("\n")
    assert "Q7rV2Q7rV2" in alone  # on its own the cut block is not recognisable: the file around it is
    # So a chunk whose file cannot be read is withheld (red team 11, F5-F7), not judged alone.
    withheld = PieceRedactor(Redactor(key=KEY)).chunk(chunk, "keys.py", 4, None)
    assert "Q7rV2" not in withheld and "keys.py was left out" in withheld
    # A chunk the file no longer has at its line (the file changed since indexing) is replaced by
    # the lines there now, judged in place: the old text is not sent.
    moved = "# a line added at the top\n" + source
    now = PieceRedactor(Redactor(key=KEY)).chunk(chunk, "keys.py", 4, moved)
    assert "Q7rV2Q7rV2" not in now and now.count("\n") == chunk.count("\n") and "[REDACTED:" in now


def test_a_secret_found_in_one_piece_is_masked_in_the_others(pieces: PieceRedactor) -> None:
    pieces.document(f'password = "{PASSWORD}"\n', "a.py", [(0, 30)])
    echoed = pieces.echo(f"log.info('retrying with {PASSWORD}')")
    assert PASSWORD not in echoed and TOKEN_PREFIX in echoed


def test_prefix_and_suffix_around_a_cursor_come_from_the_document(pieces: PieceRedactor) -> None:
    doc = f'a = 1\nTOKEN = "{GH}"\nb = 2\n'
    line, character = 1, 20
    cursor = cursor_offset(doc, line, character)
    prefix, suffix = redact_around_cursor(pieces, "x.py", doc, line, character, doc[:cursor], doc[cursor:])
    assert GH[:12] not in prefix and GH[12:] not in suffix and prefix.startswith("a = 1\nTOKEN")


def test_retrieved_items_are_redacted_against_their_file(tmp_path: Path, pieces: PieceRedactor) -> None:
    source = f'def token():\n    return "{GH}"\n'
    items = [Snippet("lib/tok.py", 0, 1, source.rstrip("\n"))]
    (out,) = redact_items(pieces, items, lambda path: source if path == "lib/tok.py" else None)
    assert GH not in out.text and out.path == "lib/tok.py" and out.text.startswith("def token():")


def test_fitting_never_cuts_inside_a_placeholder_and_counts_its_cost() -> None:
    token = "[REDACTED:github-token:0123abcd]"
    prefix = "x = 1\n" * 3 + f"t = '{token}'"
    for room in range(20, 120, 3):
        fitted, _, _, _ = fit_prompt(prefix, "", [], room, overhead=0, placeholder_chars=80)
        assert "REDACTED" not in fitted or token in fitted, (room, fitted)
        weight = len(fitted) + (80 - len(token)) * fitted.count(token)
        assert weight <= room or fitted == "", (room, fitted)


# ---- real code without secrets is never changed ---------------------------------------------------


def _real_sources(budget: int = 3_000_000) -> list[tuple[str, str]]:
    root = Path(sysconfig.get_paths()["purelib"])
    files = sorted(
        (hashlib.sha1(p.relative_to(root).as_posix().encode()).hexdigest(), p)
        for p in root.rglob("*.py")
        if not p.relative_to(root).as_posix().startswith(("codectx", "__editable__"))
    )
    out, total = [], 0
    for _, path in files:
        data = path.read_bytes()
        if len(data) > 200_000:
            continue
        out.append((path.relative_to(root).as_posix(), data.decode("utf-8", "surrogateescape")))
        total += len(data)
        if total >= budget:
            break
    return out


def test_real_source_is_byte_identical_except_for_exact_secret_spans() -> None:
    redactor = Redactor(key=KEY)
    sources = _real_sources()
    assert sum(len(t) for _, t in sources) >= 2_500_000
    changed = 0
    for rel, text in sources:
        pieces = PieceRedactor(redactor)
        # Cut like a request would: a cursor in the middle of the file, prefix and suffix.
        cut = len(text) // 2
        prefix, suffix = pieces.document(text, rel, [(0, cut), (cut, len(text))], cursor=cut)
        joined = prefix + suffix
        if not pieces.placeholders:
            assert joined == text, rel
            continue
        changed += 1
        # Put every token back: what remains must be the original, byte for byte.
        restored = joined
        for token, original in sorted(pieces.placeholders.originals.items(), key=lambda kv: -len(kv[0])):
            restored = restored.replace(token + "\n" * original.count("\n"), original)
        assert restored == text, rel
    assert changed <= len(sources) // 20  # a few fixtures with keys in them, not ordinary code


def test_a_prompt_full_of_secrets_stays_inside_its_budget(tmp_path: Path) -> None:
    from codectx.backend.client import BackendClient
    from codectx.backend.families import get_family

    from codectx.app.cli import NoIndexSource
    from codectx.app.session import WorkspaceSession
    from codectx.settings import load_settings

    root = tmp_path / "ws"
    root.mkdir()
    settings = load_settings(root, {}, environ={}, user_config=tmp_path / "none.toml")
    session = WorkspaceSession(
        settings, index=NoIndexSource(), embedder=lambda: None, client=BackendClient(settings)
    )
    completer = session.completer
    completer.placeholder_chars = 90.0  # what a placeholder costs, as measured by /tokenize
    secrets = [f"Zq{i:02d}xR7!vL2mP9k" for i in range(40)]
    doc = "".join(f'password_{i} = "{s}"\n' for i, s in enumerate(secrets)) + "def f():\n    \n"
    for budget in (400, 800, 1600):
        built = completer.build_prompt(get_family("qwen"), CompletionAsk("app.py", doc, 41, 4), budget)
        prompt, prefix, suffix, placeholders = built.prompt, built.prefix, built.suffix, built.placeholders
        assert not any(s[:12] in prompt.text for s in secrets)
        weight = len(prefix) + len(suffix) + sum(90 - len(t) for t in placeholders.tokens_in(prefix + suffix))
        assert weight <= budget, (budget, weight)
        assert prefix.endswith("def f():\n    ")
