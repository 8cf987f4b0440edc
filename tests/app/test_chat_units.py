"""Chat's pure parts: mention syntax, code blocks, applying a block (tree-sitter checked), the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codectx.app.chat_apply import apply_block
from codectx.app.chat_model import (
    LISTED_SEARCH_HITS,
    Citation,
    CodeBlock,
    Mention,
    Turn,
    blocks_of,
    listed_citations,
    markdown,
    mentions_in,
    union,
)
from codectx.app.chat_store import ChatStore, UnknownConversation
from codectx.app.refactor import EditRefused

SOURCE = (
    "import os\n\n\ndef add(a, b):\n    return a + b\n\n\ndef scale(v, f):\n    return [x * f for x in v]\n"
)


def test_mentions_follow_the_protocols_text_syntax() -> None:
    text = (
        'see @file:src/a.py and (@symbol:parse_config) @folder:"my docs/" x@file:no @diff\n'
        "@codebase:where is it read\n@problems @file:"
    )
    assert mentions_in(text) == [
        Mention("file", "src/a.py"),
        Mention("symbol", "parse_config"),
        Mention("folder", "my docs/"),
        Mention("diff"),
        Mention("codebase", "where is it read"),
        Mention("problems"),
    ]
    assert union([Mention("diff")], [Mention("diff"), Mention("file", "a")]) == [
        Mention("diff"),
        Mention("file", "a"),
    ]


def test_surfaces_list_every_other_citation_and_the_first_search_hits() -> None:
    named = Citation("calc/ops.py", 8, 10, "named in the question", "scale")
    hits = [Citation(f"m{n}.py", n, n + 3, "search", f"f{n}") for n in range(40)]
    recent = Citation("calc/report.py", 1, 4, "recently edited")
    shown, more = listed_citations([named, recent, *hits, Citation("w.py", 0, 2, "named in the question")])
    assert shown[:2] == [named, recent] and shown[-1].path == "w.py"
    assert [c for c in shown if c.reason == "search"] == hits[:LISTED_SEARCH_HITS]
    assert more == 40 - LISTED_SEARCH_HITS
    assert listed_citations(hits[:3]) == (hits[:3], 0)


def test_blocks_keep_their_language_and_path() -> None:
    text = "a\n```python path=src/a.py\nx = 1\n```\nb\n```ts:web/b.ts\nlet y\n```\n```\nplain\n```\n"
    assert blocks_of(text) == [
        CodeBlock(0, "python", "x = 1", "src/a.py"),
        CodeBlock(1, "ts", "let y", "web/b.ts"),
        CodeBlock(2, "", "plain", ""),
    ]


def test_apply_replaces_the_same_named_definition_the_selection_or_appends() -> None:
    block = CodeBlock(0, "python", "def scale(v, f):\n    # checked\n    return [x * f for x in v]", "m.py")
    new, warnings = apply_block(block, "m.py", SOURCE, None)
    assert new == SOURCE.replace("def scale(v, f):\n", "def scale(v, f):\n    # checked\n") and not warnings
    other = CodeBlock(0, "python", "def mul(a, b):\n    return a * b", "elsewhere.py")
    appended, warnings = apply_block(other, "m.py", SOURCE, None)
    assert appended.startswith(SOURCE.rstrip("\n")) and appended.endswith(
        "def mul(a, b):\n    return a * b\n"
    )
    assert warnings and "elsewhere.py" in warnings[0]
    line = CodeBlock(0, "python", "return a - b", "")
    replaced, _ = apply_block(line, "m.py", SOURCE, (4, 4, 4, 16))
    assert "    return a - b\n" in replaced and "a + b" not in replaced


def test_apply_refuses_a_result_that_does_not_parse() -> None:
    broken = CodeBlock(0, "python", "def scale(v, f):\n    return [x * f for x in", "")
    with pytest.raises(EditRefused, match="does not parse"):
        apply_block(broken, "m.py", SOURCE, None)
    # A file that was broken already may still be edited.
    apply_block(broken, "m.py", SOURCE + "def (:\n", None)


def test_store_round_trip_lists_newest_first_and_refuses_bad_ids(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats")
    first, second = store.create("one"), store.create(None)
    second.updated_at = "9999"
    store.save(second)
    fresh = ChatStore(tmp_path / "chats")
    assert [c.conversation_id for c in fresh.all()] == [second.conversation_id, first.conversation_id]
    assert fresh.get(first.conversation_id).title == "one"
    (tmp_path / "chats" / "0123456789ab.json").write_text("{not json", encoding="utf-8")
    assert len(ChatStore(tmp_path / "chats").all()) == 2  # the damaged file is skipped
    for bad in ("../../etc/passwd", "nope", "0123456789ab"):
        with pytest.raises(UnknownConversation):
            fresh.get(bad)
    assert fresh.delete(first.conversation_id) and not fresh.delete(first.conversation_id)
    assert json.loads((tmp_path / "chats" / f"{second.conversation_id}.json").read_text())["title"]
    assert oct((tmp_path / "chats" / f"{second.conversation_id}.json").stat().st_mode & 0o777) == "0o600"


def test_store_saves_every_turn_and_later_changes_as_the_conversation_holds_them(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats")
    conv = store.create("turns")
    cite = Citation("pkg/a.py", 3, 9, "retrieved", "f")
    conv.turns += [
        Turn("u1", "user", "why?", sent="why? + context"),
        Turn("a1", "assistant", "because", citations=[cite], record={"n": [1, {"x": "y"}]}),
    ]
    store.save(conv)
    conv.turns += [Turn("u2", "user", "and then?"), Turn("a2", "assistant", "then this", cancelled=True)]
    conv.summary, conv.first_kept, conv.title = "they talked", 2, "renamed"
    store.save(conv)
    saved = json.loads((tmp_path / "chats" / f"{conv.conversation_id}.json").read_text())
    assert saved == conv.as_json()  # the same document as encoding it whole
    again = ChatStore(tmp_path / "chats").get(conv.conversation_id)
    assert again == conv
    # A reloaded conversation's turns are other objects: their text is not taken from the cache.
    again.turns[1] = Turn("a1", "assistant", "rewritten")
    store.save(again)
    assert ChatStore(tmp_path / "chats").get(conv.conversation_id).turns[1].text == "rewritten"


def test_an_export_keeps_the_placeholders_the_model_saw_not_the_secrets_put_back(tmp_path: Path) -> None:
    """The answer the user sees has redacted secrets put back; `/save` and `--export` wrote that
    into a Markdown file in the current folder (perhaps the workspace, perhaps committed)."""
    secret = "hunter2-Xq9vLm"
    token = "[REDACTED:keyword-assignment:1a2b3c4d]"
    conv = ChatStore(tmp_path / "chats").create("db")
    conv.turns += [
        Turn("t1", "user", "Why does connect fail?", sent="Why does connect fail?"),
        Turn("t2", "assistant", f"Use password = '{secret}'.", sent=f"Use password = '{token}'."),
    ]
    text = markdown(conv)
    assert token in text and secret not in text
    assert "Why does connect fail?" in text


def test_an_export_masks_a_token_the_user_pasted_into_a_question_and_the_title(tmp_path: Path) -> None:
    """Red team 2: the question's token was masked in the request, and written whole into the
    export (and the title made of it): exports are made to be shared."""
    from codectx.app.chat import ChatService

    pasted = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    store = ChatStore(tmp_path / "chats")
    conv = store.create(f"why does {pasted} get 401?")
    conv.turns += [Turn("t1", "user", f"why does {pasted} get 401?"), Turn("t2", "assistant", "It expired.")]
    store.save(conv)
    text = ChatService(ChatStore(tmp_path / "chats")).export(conv.conversation_id)
    assert pasted not in text and text.count("[REDACTED:github-token:") == 2
    assert "get 401?" in text and "It expired." in text


def test_apply_keeps_the_placeholder_of_a_secret_the_answer_moved_out_of_sight(tmp_path: Path) -> None:
    """Red team 2: an answer put `WELCOME = "[REDACTED:...]"` (a password's placeholder) in a block;
    applied, the restored `Parsnipcrumble` sat where no rule finds it, and the next request sent it.
    The stored answer (after a restart: no mapping in memory) still tells what was put back."""
    from codectx.app.chat import ChatService
    from codectx.privacy.redact import Redactor
    from codectx.settings import load_settings

    redactor = Redactor(load_settings(None, {}, environ={}, user_config=tmp_path / "none.toml"))

    def shown(text: str) -> str:
        return redactor.redact(text, "app/greeting.py").text

    token = "[REDACTED:keyword-assignment:0a1b2c3d]"
    sent = f'Set it:\n```python\nWELCOME = "{token}"\n```\nand\n```python\ndb_password = "{token}"\n```\n'
    text = sent.replace(token, "Parsnipcrumble")
    store = ChatStore(tmp_path / "chats")
    conv = store.create("t")
    conv.turns += [Turn("u1", "user", "q"), Turn("a1", "assistant", text, blocks=blocks_of(text), sent=sent)]
    store.save(conv)
    chat = ChatService(ChatStore(tmp_path / "chats"))
    source = "def greet():\n    return 1\n"
    moved, warnings = chat.apply(conv.conversation_id, "a1", 0, "app/greeting.py", source, None, shown)
    assert "Parsnipcrumble" not in moved and f'WELCOME = "{token}"' in moved
    assert any("left as placeholders" in w for w in warnings)
    kept, warnings = chat.apply(conv.conversation_id, "a1", 1, "app/greeting.py", source, None, shown)
    assert 'db_password = "Parsnipcrumble"' in kept and not warnings
    unchecked, _ = chat.apply(conv.conversation_id, "a1", 0, "app/greeting.py", source, None, None)
    assert 'WELCOME = "Parsnipcrumble"' in unchecked  # privacy.redact off: nothing to keep it from


def test_apply_checks_a_block_with_a_multi_line_secret_and_fails_closed_when_unsure(tmp_path: Path) -> None:
    """The review: a private key's token keeps its line breaks and restoring takes them back, so
    the stored texts did not align, and the block was applied unchecked (WELCOME in clear). Now they
    align; and when they cannot, every placeholder stays."""
    from codectx.app.chat import ChatService
    from codectx.app.restore import restore_prose
    from codectx.privacy.pieces import Placeholders
    from codectx.privacy.redact import Redactor
    from codectx.settings import load_settings

    redactor = Redactor(load_settings(None, {}, environ={}, user_config=tmp_path / "none.toml"))

    def shown(text: str) -> str:
        return redactor.redact(text, "app/keys.py").text

    key_token, word_token = "[REDACTED:private-key:11112222]", "[REDACTED:keyword-assignment:0a1b2c3d]"
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    sent = f'Here:\n```python\nKEY = """{key_token}\n\n"""\nWELCOME = "{word_token}"\n```\n'
    text = restore_prose(sent, Placeholders({key_token: key, word_token: "Parsnipcrumble"}))
    store = ChatStore(tmp_path / "chats")
    conv = store.create("t")
    conv.turns += [Turn("u1", "user", "q"), Turn("a1", "assistant", text, blocks=blocks_of(text), sent=sent)]
    store.save(conv)
    chat = ChatService(ChatStore(tmp_path / "chats"))
    new, warnings = chat.apply(conv.conversation_id, "a1", 0, "app/keys.py", "x = 1\n", None, shown)
    assert "Parsnipcrumble" not in new and f'WELCOME = "{word_token}"' in new and key in new
    assert any("left as placeholders" in w for w in warnings)
    # A stored answer whose block no longer matches what the model sent: nothing is put back.
    tampered = text.replace("Here:", "Here it is:").replace("WELCOME", "GREETING")
    conv.turns[1] = Turn("a1", "assistant", tampered, blocks=blocks_of(tampered), sent=sent)
    store.save(conv)
    chat = ChatService(ChatStore(tmp_path / "chats"))
    new, warnings = chat.apply(conv.conversation_id, "a1", 0, "app/keys.py", "x = 1\n", None, shown)
    assert "Parsnipcrumble" not in new and "BEGIN PRIVATE KEY" not in new and key_token in new
    assert any("could not tell" in w for w in warnings)
