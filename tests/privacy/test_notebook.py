"""Jupyter notebooks: cells read as code and text, and the outputs of cells that show a secret.

Red team 6 (H7) sent a notebook whose cell `os.environ['OPENAI_API_KEY']` showed the key in its
result, and whose `!cat ~/.pgpass` printed a password line: the JSON around each line hid both
from the rules. Values here are our own; the notebooks are laid out as nbformat writes them.
"""

from __future__ import annotations

import json

import pytest

from codectx.privacy.notebook import read
from codectx.privacy.redact import Redactor
from codectx.settings import load_settings

KEY = b"test-key-test-key-test-key-test!"


def _notebook(
    *cells: tuple[list[str], list[dict[str, object]]], markdown: str = "", indent: int | None = 1
) -> str:
    body = [{"cell_type": "markdown", "id": "m0", "metadata": {}, "source": [markdown]}] if markdown else []
    for n, (source, outputs) in enumerate(cells):
        body.append(
            {
                "cell_type": "code",
                "execution_count": n,
                "id": f"c{n}",
                "metadata": {},
                "outputs": outputs,
                "source": source,
            }
        )
    notebook = {"cells": body, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=indent, ensure_ascii=False) + "\n"


def _result(text: str) -> dict[str, object]:
    data = {"text/plain": [text]}
    return {"data": data, "execution_count": 1, "metadata": {}, "output_type": "execute_result"}


def _stream(*lines: str) -> dict[str, object]:
    return {"name": "stdout", "output_type": "stream", "text": list(lines)}


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


SHOWN = [
    (["import os\n", "os.environ['OPENAI_API_KEY']"], _result("'Vf3kPz8QmN2x'"), "Vf3kPz8QmN2x"),
    (['os.getenv("DB_PASSWORD")'], _result("'plumbago'"), "plumbago"),
    (["print(db_password)"], _stream("Hk29sLq0Zm\n"), "Hk29sLq0Zm"),
    (["%env AWS_SECRET_ACCESS_KEY"], _stream("kq8Vb2Lm4Tq9xZr\n"), "kq8Vb2Lm4Tq9xZr"),
    (["settings.API_KEY"], _result("'abc123quokka'"), "abc123quokka"),
    (["!cat ~/.pgpass"], _stream("db.example.com:5432:prod:admin:Yw6Rn1Hq4Jt8Kc2B\n"), "Yw6Rn1Hq4Jt8Kc2B"),
    (["!cat .env"], _stream("DEBUG=1\n", "SIGNING=crimsonwalrus\n"), "crimsonwalrus"),
    # Review: print() anywhere in the cell, an f-string, a count before the file, every variable.
    (["print(db_password)\n", "print('done')"], _stream("hunter2horse\n", "done\n"), "hunter2horse"),
    (['print(f"{api_token}")'], _stream("tundra8quokka\n"), "tundra8quokka"),
    (["!head -n 5 .env"], _stream("SIGNING=crimsonwalrus\n"), "crimsonwalrus"),
    (["!echo $GITHUB_TOKEN"], _stream("tundra8quokka\n"), "tundra8quokka"),
    (["!env"], _stream("PATH=/usr/bin\n", "SIGNING=tundra8quokka\n"), "tundra8quokka"),
    # Red team 7: a lookup printed, a never-send file read from Python, an error's message.
    (["print(os.getenv('DB_PASSWORD'))"], _stream("plumbago77\n"), "plumbago77"),
    (["print(open('/home/me/.vault-token').read())"], _stream("hvs.tundra8quokka\n"), "hvs.tundra8quokka"),
    (["open('/home/me/.pgpass').read()"], _result("'db:5432:*:app:plumbago77\\n'"), "plumbago77"),
    (
        ["int(os.environ['DB_PASSWORD'])"],
        {
            "ename": "ValueError",
            "evalue": "invalid literal for int(): 'plumbago77'",
            "output_type": "error",
            "traceback": [],
        },
        "plumbago77",
    ),
]


@pytest.mark.parametrize("indent", [1, None], ids=["nbformat", "compact"])
@pytest.mark.parametrize(("source", "output", "secret"), SHOWN)
def test_a_cell_that_shows_a_secret_has_its_output_masked(
    redactor: Redactor, source: list[str], output: dict[str, object], secret: str, indent: int | None
) -> None:
    text = _notebook((source, [output]), indent=indent)
    out = redactor.redact(text, "notebooks/explore.ipynb").text
    assert secret not in out
    json.loads(out)  # still a notebook


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # A printed `.pgpass` or `.env` line is caught by the rules for such lines, whoever printed it.
        (_notebook((["show()"], [_stream("db.internal:5432:*:app:Hunter2Orchid\n")])), "Hunter2Orchid"),
        (_notebook((["show()"], [_stream("DB_PASSWORD=crimsonwalrus\n")])), "crimsonwalrus"),
        # A cell's source is read as code.
        (_notebook((['conn = connect(password="Wq8zLm2Kp")\n'], [])), "Wq8zLm2Kp"),
        # A markdown cell is read as text.
        (_notebook(markdown="The staging password: TulipWombat61\n"), "TulipWombat61"),
    ],
)
def test_cells_and_outputs_are_read_as_code_and_text(redactor: Redactor, text: str, secret: str) -> None:
    out = redactor.redact(text, "explore.ipynb").text
    assert secret not in out
    json.loads(out)


@pytest.mark.parametrize("indent", [1, None], ids=["nbformat", "compact"])
def test_other_cells_and_outputs_are_kept(redactor: Redactor, indent: int | None) -> None:
    text = _notebook(
        (["len(df)"], [_result("42")]),
        (["token"], [_result("'the'")]),  # an NLP notebook's token, not a credential
        (["print(df.head())"], [_stream("   id  name\n", "0   1  alice\n")]),
        (['os.environ["HOME"]'], [_result("'/home/me'")]),
        # Set from a prompt, not shown: the output is the prompt and getpass's dots.
        (['os.environ["OPENAI_API_KEY"] = getpass.getpass("Key: ")'], [_stream("Key: ········")]),
        markdown="# Exploring the data\n",
        indent=indent,
    )
    assert redactor.redact(text, "explore.ipynb").text == text


def test_the_views_keep_every_offset() -> None:
    text = _notebook((['key = "Hunter2"\n', "print(key)"], [_stream("a\tb\n")]))
    reading = read(text, lambda path: False)
    code, prose = reading.code, reading.prose
    assert len(code) == len(prose) == len(text)
    # Escaped quotes read as quotes, `\\n` as a line break, at the same offsets.
    assert 'key =  "Hunter2"  \n' in code and "print(key)" in code and "print(key)" not in prose
    assert "a \tb \n" in prose


def test_a_piece_cut_from_a_notebook_is_read_the_same() -> None:
    """Completions and chat send pieces of a file, each scanned with the lines around it: a notebook's
    middle has no `"cells"` key and may start inside an array."""
    from codectx.privacy.pieces import PieceRedactor

    text = _notebook(
        (["len(df)"], [_result("42")]),
        (["print(df)"], [_stream("x\n") for _ in range(30)]),
        (['os.getenv("DB_PASSWORD")'], [_result("'plumbago'")]),
        (["show()"], [_stream("db.internal:5432:*:app:Hunter2Orchid\n")]),
    )
    rows = text.split("\n")
    middle = "\n".join(rows[len(rows) // 2 :])
    assert '"cells"' not in middle and "plumbago" in middle
    out = PieceRedactor(Redactor(key=KEY)).text(middle, "explore.ipynb")
    assert "plumbago" not in out and "Hunter2Orchid" not in out


def test_a_piece_with_crlf_line_ends_is_read_the_same() -> None:
    """A Windows checkout (autocrlf) ends each line with CR LF (review of stop 55)."""
    from codectx.privacy.pieces import PieceRedactor

    text = _notebook(
        (["print(df)"], [_stream("x\n") for _ in range(30)]),
        (['os.getenv("DB_PASSWORD")'], [_result("'plumbago'")]),
    )
    rows = text.split("\n")
    middle = "\r\n".join(rows[len(rows) // 2 :])
    assert '"cells"' not in middle and "plumbago" in middle
    assert "plumbago" not in PieceRedactor(Redactor(key=KEY)).text(middle, "explore.ipynb")


def test_a_never_send_glob_of_the_users_counts_for_a_printed_file(tmp_path: object) -> None:
    text = _notebook((["!cat deploy/notes.txt"], [_stream("the vault says tundra8quokka\n")]))
    assert "tundra8quokka" in Redactor(key=KEY).redact(text, "a.ipynb").text
    mine = load_settings(None, {"privacy.never_send": ["deploy/notes.txt"]}, environ={})
    assert "tundra8quokka" not in Redactor(mine, key=KEY).redact(text, "a.ipynb").text


@pytest.mark.parametrize(
    "text",
    [
        '{"cells": [{"cell_type": "code", "source": [], "outputs": "oops"}]}',
        '{"cells": [{"cell_type": 3, "source": 7, "outputs": [1, "x", {"data": []}]}]}',
        '{"cells": "none"}',
        "[" * 200 + "]" * 200,
        '{"cells": [{"source": ["a\\',
    ],
)
def test_a_malformed_notebook_is_read_as_text_without_failing(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text, "bad.ipynb").text == text


def test_a_long_last_line_is_not_read_for_what_it_shows(redactor: Redactor) -> None:
    """A line of 20 000 spaces made the display pattern backtrack for seconds (review of stop 55)."""
    text = _notebook((["a" + " " * 20000 + "!"], [_result("'x'")]))
    assert redactor.redact(text, "slow.ipynb").text == text
