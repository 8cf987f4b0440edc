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


def test_an_export_masks_a_token_a_notice_quotes(tmp_path: Path) -> None:
    """Red team 9 (E01): a token typed in an `@file:` mention was masked in the question line and
    shown whole in the notice under the answer (`@file <token>: ... no such file`)."""
    from codectx.app.chat import ChatService

    pasted = "ghp_" + "Zq88aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xYz"
    store = ChatStore(tmp_path / "chats")
    conv = store.create("compare")
    conv.turns += [
        Turn("t1", "user", f"compare @file:{pasted} please"),
        Turn("t2", "assistant", "Which file?", notices=[f"@file {pasted}: {pasted}: no such file"]),
    ]
    store.save(conv)
    text = ChatService(ChatStore(tmp_path / "chats")).export(conv.conversation_id)
    assert pasted not in text
    assert "> @file [REDACTED:github-token:" in text and "no such file" in text


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
    # Where a rule still finds it, in the file that holds it already: put back, no warning. (Red
    # team 5 moved this control from a file without the value: see the next test.)
    holder = 'db_password = "Parsnipcrumble"\n'
    kept, warnings = chat.apply(conv.conversation_id, "a1", 1, "app/greeting.py", holder, None, shown)
    assert kept.count('db_password = "Parsnipcrumble"') == 2 and not warnings
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
    holder = f'KEY = """{key}\n\n"""\n'  # the file the key came from: it may go back there
    new, warnings = chat.apply(conv.conversation_id, "a1", 0, "app/keys.py", holder, None, shown)
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


def test_apply_puts_a_secret_back_only_into_the_file_that_holds_it(tmp_path: Path) -> None:
    """Red team 5 (S7): a token from a git-ignored local_settings.py (sent via @file as a
    placeholder) was put back into a tracked src/settings.py the answer named, where a rule still
    finds it: one `git commit && git push` from being shared. A secret now goes back only into a
    file that holds that value already; elsewhere it stays a placeholder, and a warning says so."""
    from codectx.app.chat import ChatService
    from codectx.app.restore import restore_prose
    from codectx.privacy.pieces import Placeholders
    from codectx.privacy.redact import Redactor
    from codectx.settings import load_settings

    redactor = Redactor(load_settings(None, {}, environ={}, user_config=tmp_path / "none.toml"))

    def shown(text: str) -> str:
        return redactor.redact(text, "src/settings.py").text

    value = "ghp_" + "Zq8mL2xR7tN4vW9yZ1bC3dF6gH0jK5pS8aE9"
    token = "[REDACTED:github-token:0a1b2c3d]"
    sent = f'Updated.\n```python path=src/settings.py\nimport os\nGITHUB_TOKEN = "{token}"\n```\n'
    text = restore_prose(sent, Placeholders({token: value}))
    store = ChatStore(tmp_path / "chats")
    conv = store.create("t")
    conv.turns += [Turn("u1", "user", "q"), Turn("a1", "assistant", text, blocks=blocks_of(text), sent=sent)]
    store.save(conv)
    live = ChatService(store)  # the process that made the answer: its mapping is in memory
    live.placeholders[conv.conversation_id] = Placeholders({token: value})
    for chat in (live, ChatService(ChatStore(tmp_path / "chats"))):  # and after a restart
        tracked, warnings = chat.apply(
            conv.conversation_id, "a1", 0, "src/settings.py", "import os\n", None, shown
        )
        assert value not in tracked and f'GITHUB_TOKEN = "{token}"' in tracked
        assert any("does not hold" in w and "src/settings.py" in w for w in warnings), warnings
        origin = f'GITHUB_TOKEN = "{value}"\n'
        back, warnings = chat.apply(conv.conversation_id, "a1", 0, "local_settings.py", origin, None, shown)
        assert token not in back and back.count(value) == 2
        assert warnings == [
            "the answer names src/settings.py for this block; it is applied to local_settings.py"
        ]
        # A longer value that starts with it is not it (review: a substring test held it).
        longer, warnings = chat.apply(
            conv.conversation_id, "a1", 0, "src/settings.py", f'OLD = "{value}9"\n', None, shown
        )
        assert f'GITHUB_TOKEN = "{token}"' in longer
        assert any("does not hold" in w for w in warnings), warnings


def test_apply_refuses_git_and_never_send_targets(tmp_path: Path) -> None:
    """Red team 5 (S6): a block labelled ```ini path=.git/config became an edit of .git/config (its
    `core.fsmonitor` command ran on the next `git status`), and .env's text came back in newText.
    Never-send files, anything under .git/ (by its own name or a link's real path) are refused."""
    from codectx.app.chat import ChatService
    from codectx.app.chat_apply import target_refusal
    from codectx.settings import load_settings

    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / "conf").mkdir()
    (root / "conf" / "git.ini").symlink_to(root / ".git" / "config")
    (root / "conf" / "env.txt").symlink_to(root / ".env")
    (root / "conf" / "app.ini").write_text("[app]\n", encoding="utf-8")
    user = tmp_path / "user.toml"
    user.write_text('[privacy]\nnever_send = ["private/**"]\n', encoding="utf-8")
    settings = load_settings(root, {}, environ={}, user_config=user)
    refused = (".git/config", ".git", "sub/.GIT/hooks/pre-commit", ".git./config", ".env", "deploy/.env.prod")
    for rel in (*refused, "keys/id_rsa", "private/notes.md", "conf/git.ini", "conf/env.txt"):
        why = target_refusal(rel, settings, root)
        assert why and rel in why and (".git/" in why or "never-send" in why), (rel, why)
    for rel in ("src/a.py", ".gitignore", ".github/workflows/ci.yml", "conf/app.ini", "docs/git.md"):
        assert target_refusal(rel, settings, root) is None, rel
    assert target_refusal("private/notes.md", None) is None  # the user's list needs their settings
    # The service refuses too (built-in list), before it reads a block or a file.
    text = "Fix:\n```ini path=.git/config\n[core]\n\tfsmonitor = touch pwned\n```\n"
    store = ChatStore(tmp_path / "chats")
    conv = store.create("t")
    conv.turns += [Turn("u1", "user", "q"), Turn("a1", "assistant", text, blocks=blocks_of(text), sent=text)]
    store.save(conv)
    for rel in (".git/config", ".env"):
        with pytest.raises(EditRefused, match="refused to apply the code block"):
            ChatService(store).apply(conv.conversation_id, "a1", 0, rel, "x\n", None, None)
    # An editor that skipped the label (it names .git/) and chose the open file is told why.
    _new, warnings = ChatService(store).apply(conv.conversation_id, "a1", 0, "notes.ini", "[a]\n", None, None)
    assert warnings == [
        "the answer names .git/config for this block (a file codectx never edits: under .git/ or "
        "never-send); it is applied to notes.ini"
    ]


def test_a_link_named_git_is_judged_by_its_own_name(tmp_path: Path) -> None:
    """Review of stop 54: with `p/.git -> ../.repo/projects/p.git` (Android's repo tool), the real
    path holds no `.git` part; the name the editor uses does, and is refused."""
    from codectx.lsp.folders import lexical_names

    from codectx.app.chat_apply import target_refusal

    root = tmp_path / "ws"
    (root / ".repo" / "projects" / "p.git").mkdir(parents=True)
    (root / ".repo" / "projects" / "p.git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / "p").mkdir()
    (root / "p" / ".git").symlink_to("../.repo/projects/p.git")
    assert target_refusal(".repo/projects/p.git/config", None, root) is None  # the real path alone
    names = lexical_names(root / "p" / ".git" / "config", [root])
    assert names == ["p/.git/config"] and target_refusal(names[0], None)


def test_many_diagnostics_are_scanned_as_a_few_regions() -> None:
    """Review of stop 54: one scan per diagnostic ran past the scan's time limit with thousands."""
    from codectx.app.chat_context import _line_runs

    assert _line_runs([40, 3, 5, 3, 12, 500]) == [(4, 10), (41, 1), (501, 1)]
    assert len(_line_runs(list(range(0, 3000, 2)))) == 1
