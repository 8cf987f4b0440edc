"""Regressions for the egress gate on ordinary code (false blocks) that must still catch real secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codectx.privacy.audit import AuditLog
from codectx.privacy.egress import EgressGate
from codectx.settings import load_settings

ENDPOINT = "http://127.0.0.1:1/v1/completions"

# Django-auth-style code (written for this test): "password" in prose, docstrings and code, where the
# serialised body reads `password changes.\n`, `password is None:\n`, `Password confirmation\")`.
AUTH_SNIPPETS = [
    """def authenticate(self, request, username=None, password=None, **kwargs):
    if username is None or password is None:
        return
    try:
        user = UserModel._default_manager.get_by_natural_key(username)
    except UserModel.DoesNotExist:
        UserModel().set_password(password)
    else:
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
""",
    '''class AbstractBaseUser(models.Model):
    password = models.CharField(_("password"), max_length=128)

    def set_password(self, raw_password):
        """
        Set the password to the given raw string, taking care of the hashing.
        Passwords set to None are unusable and shouldn't be considered password changes.
        """
        self.password = make_password(raw_password)
        self._password = raw_password
''',
    '''def update_session_auth_hash(request, user):
    """
    Updating a user's password logs out all sessions for the user.

    Take the current request and the updated user object from which the new
    session hash will be derived and update the session hash appropriately to
    prevent a password change from logging out the session from which the
    password was changed.
    """
    request.session.cycle_key()
''',
    """class SetPasswordMixin:
    @staticmethod
    def create_password_fields(label1=_("Password"), label2=_("Password confirmation")):
        password1 = forms.CharField(label=label1, strip=False, widget=forms.PasswordInput())
        password2 = forms.CharField(
            label=label2,
            help_text=_("Enter the same password as before, for verification."),
        )
        return password1, password2

    def validate_passwords(self, password1_field_name="password1", password2_field_name="password2"):
        password1 = self.cleaned_data.get(password1_field_name)
        password2 = self.cleaned_data.get(password2_field_name)
        if password1 and password2 and password1 != password2:
            error = ValidationError(self.error_messages["password_mismatch"], code="password_mismatch")
            self.add_error(password2_field_name, error)
""",
    '''class UserAttributeSimilarityValidator:
    """
    Validate that the password is sufficiently different from the user's attributes.
    """

    def get_help_text(self):
        return _("Your password can’t be too similar to your other personal information.")

def check_password(password, encoded, setter=None, preferred="default"):
    """
    Return a boolean of whether the raw password matches the three
    part encoded digest.
    """
    if password is None or not is_password_usable(encoded):
        return False
''',
]

REAL_PASSWORD = "Xk9#vQ2!mLp7wR"


def _gate(tmp_path: Path) -> EgressGate:
    return EgressGate(load_settings(None, environ={}), AuditLog(tmp_path / "audit.jsonl"))


def _body(prompt: str) -> dict[str, Any]:
    return {"prompt": prompt, "model": "x", "max_tokens": 16, "stop": ["\n\n"]}


@pytest.mark.parametrize("snippet", AUTH_SNIPPETS)
def test_django_auth_style_code_is_not_blocked(tmp_path: Path, snippet: str) -> None:
    prepared = _gate(tmp_path).prepare(ENDPOINT, _body(snippet), [])
    assert json.loads(prepared.content)["prompt"] == snippet
    assert prepared.findings == []


def test_all_snippets_in_one_body_are_not_blocked(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": s} for s in AUTH_SNIPPETS], "model": "x"}
    prepared = _gate(tmp_path).prepare(ENDPOINT, body, [])
    assert prepared.findings == []


def test_real_password_in_auth_code_is_still_redacted(tmp_path: Path) -> None:
    snippet = AUTH_SNIPPETS[0] + f'\nDATABASE_PASSWORD = "{REAL_PASSWORD}"\n' + AUTH_SNIPPETS[1]
    prepared = _gate(tmp_path).prepare(ENDPOINT, _body(snippet), [])
    assert REAL_PASSWORD.encode() not in prepared.content
    assert "[REDACTED:" in json.loads(prepared.content)["prompt"]
    assert len(prepared.findings) == 1


def test_prose_password_phrase_is_still_redacted(tmp_path: Path) -> None:
    snippet = AUTH_SNIPPETS[2] + f"\n# the staging password is {REAL_PASSWORD}\n"
    prepared = _gate(tmp_path).prepare(ENDPOINT, _body(snippet), [])
    assert REAL_PASSWORD.encode() not in prepared.content
    assert [f.rule for f in prepared.findings] == ["password-phrase"]


def test_secret_across_json_structure_before_an_escaped_quote_is_redacted(tmp_path: Path) -> None:
    # Key and value in separate strings, the value holding an escaped quote: only the serialised body
    # pairs them; the escaped quote ends the value, and the part before it is redacted in place.
    body = {"prompt": "x", "metadata": {"password": 'Tr0ub4dor&3x"tail'}}
    prepared = _gate(tmp_path).prepare(ENDPOINT, body, [])
    assert b"Tr0ub4dor" not in prepared.content
    assert json.loads(prepared.content)["metadata"]["password"].endswith('"tail')
    assert [e.field for e in prepared.findings] == ["<body>"]


def test_secret_across_json_structure_is_still_redacted(tmp_path: Path) -> None:
    body = {"prompt": "if password is None:\n    return\n", "metadata": {"password": "Tr0ub4dor&3x"}}
    prepared = _gate(tmp_path).prepare(ENDPOINT, body, [])
    assert b"Tr0ub4dor" not in prepared.content
    assert [e.field for e in prepared.findings] == ["<body>"]


def test_netrc_password_without_origin_is_redacted(tmp_path: Path) -> None:
    # The gate scans without a file name: a .netrc entry is recognised by the line's shape.
    netrc = "# setup\nmachine api.example.io login deploy password Winter4932_Boh\n"
    split = "machine api.example.io\n  login deploy\n  password Winter4932_Boh\n"
    for text in (netrc, split):
        prepared = _gate(tmp_path).prepare(ENDPOINT, _body(text), [])
        assert b"Winter4932_Boh" not in prepared.content
        assert [f.rule for f in prepared.findings] == ["password-phrase"]
