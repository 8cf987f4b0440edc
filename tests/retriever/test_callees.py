"""Likely next calls: definitions called by code similar to the cursor's scope, and how the
definition sources are fused (real indexes of small repositories)."""

from __future__ import annotations

from pathlib import Path

from codectx.retriever.callees import calls_in, similar_code_callees
from codectx.retriever.candidates import Candidate
from codectx.retriever.context import assemble_context
from codectx.retriever.rankdefs import fuse_definitions
from codectx.retriever.snapshot import snapshot_of

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}

MAIL = '''"""Outgoing mail."""


def send_mail(to, subject, body):
    """Queue one message for delivery."""
    return (to, subject, body)
'''

RENDER = '''"""Templates."""


def render_template(name, values):
    """Render a named template with values."""
    return name.format(**values)


class Page:
    def publish(self, target):
        return target
'''

VIEWS = '''"""Notifications that existing features send."""

from lib.mail import send_mail
from lib.render import render_template


def notify_order_shipped(user, order):
    body = render_template("order_shipped", {"user": user, "order": order})
    send_mail(user.email, "Your order has shipped", body)


def notify_password_changed(user):
    body = render_template("password_changed", {"user": user})
    send_mail(user.email, "Your password was changed", body)

    def local_helper(x):
        return x

    local_helper(1)
'''

# The function being written: it renders a template; the mail call is not typed yet.
SIGNUP = (
    '''"""Sign-up flow."""

from lib.render import render_template


def notify_signup_welcome(user):
    body = render_template("signup_welcome", {"user": user})
'''
    + "    \n"
)


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "app").mkdir()
    (root / ".git").mkdir()
    for folder in ("lib", "app"):
        (root / folder / "__init__.py").write_text("")
    (root / "lib" / "mail.py").write_text(MAIL)
    (root / "lib" / "render.py").write_text(RENDER)
    (root / "app" / "views.py").write_text(VIEWS)
    (root / "app" / "signup.py").write_text(SIGNUP)
    return root


def test_calls_in_reads_chains_and_decorators_and_skips_keywords() -> None:
    text = (
        "@app.route('/x')\ndef view(a):\n    if (a):\n        return len(a)\n"
        "    x = self.session.send(req)\n    y = make ( 1 )\n    print(x)\n"
    )
    calls = calls_in(text)
    assert calls[:2] == ["app.route", "self.session.send"]  # `def view(` defines, it does not call
    assert "make" in calls
    for skipped in ("if", "len", "print", "return"):
        assert skipped not in calls


def test_calls_in_reads_a_decorator_after_a_run_of_blank_lines() -> None:
    # The decorator pattern reads each line once: `^\s*@` crossed blank lines, so a run followed
    # by anything but `@` was read again from each of its lines (1-3 s at 20,000 blank lines).
    text = (
        "class A:\n"
        + "\n" * 3000
        + "    x = 1\n    @staticmethod\n  \t@cache.memo\n    def f():\n        pass\n"
    )
    assert calls_in(text) == ["staticmethod", "cache.memo"]


def test_callees_resolve_through_the_similar_chunks_own_imports(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _settings, store = build_index(root, **LEXICAL)
    snap = snapshot_of(store)
    views = snap.chunks_for_file("app/views.py")
    shipped = next(c for c in views if c.symbol == "notify_order_shipped")
    changed = next(c for c in views if c.symbol == "notify_password_changed")
    votes = similar_code_callees(snap, [(shipped, 1.0), (changed, 0.5)], ["render_template"], "python")
    by_name = {v.definition.qualname: v for v in votes}
    # app/views.py imports send_mail from lib.mail: that import resolves it, not a name guess.
    assert by_name["send_mail"].definition.path == "lib/mail.py"
    assert by_name["send_mail"].score == 1.5  # one vote per similar chunk, weighted by similarity
    assert by_name["send_mail"].sources == ["notify_order_shipped", "notify_password_changed"]
    assert "render_template" not in by_name  # the scope already uses it
    assert all("local_helper" not in q for q in by_name)  # local to the similar code itself
    lower = similar_code_callees(snap, [(shipped, 0.2)], [], "python")
    assert {v.definition.qualname for v in lower} == {"send_mail", "render_template"}
    assert all(v.score == 0.2 for v in lower)


def test_context_offers_the_call_similar_code_makes_before_its_name_is_typed(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    settings, store = build_index(root, **LEXICAL)
    text = SIGNUP
    line = text.split("\n").index("    ")
    result = assemble_context(store, settings, "app/signup.py", text, line, 4)
    spans = [(c.path, c.symbol) for c in result.ranked]
    assert ("lib/mail.py", "send_mail") in spans[:3]
    mail = next(c for c in result.ranked if c.symbol == "send_mail")
    assert mail.reason == "definition" and "similar code" in mail.why
    # Without the search there is no similar code, and nothing else points at send_mail.
    quiet = settings.with_overrides({"retriever.context_search": False})
    alone = assemble_context(store, quiet, "app/signup.py", text, line, 4)
    assert "send_mail" not in {c.symbol for c in alone.ranked}


def _cand(path: str, start: int, symbol: str, typed: bool = False) -> Candidate:
    return Candidate(path, start, start + 3, symbol, "definition", 0.0, symbol, f"why {symbol}", typed)


def test_fuse_definitions_sums_agreement_and_drops_weightless_lists() -> None:
    a, b, c = _cand("a.py", 0, "a"), _cand("b.py", 0, "b"), _cand("c.py", 0, "c", typed=True)
    lists = {"used": [a, c], "callees": [b, a], "off": [_cand("d.py", 0, "d")]}
    fused = fuse_definitions(lists, {"used": 1.0, "callees": 1.0, "off": 0.0})
    by_symbol = {x.symbol: x for x in fused}
    assert set(by_symbol) == {"a", "b", "c"}
    # `a` is in both lists, so it outranks `b` although `b` tops one list.
    assert by_symbol["a"].score > by_symbol["b"].score > by_symbol["c"].score
    assert by_symbol["a"].why == "why a" and by_symbol["c"].typed_call
    assert a.score == 0.0  # the inputs are not modified
