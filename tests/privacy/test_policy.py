"""One never-index / never-send policy (codectx/privacy/policy.py): what either list refused before
it became one is refused by both the indexer and the egress gate, and no setting allows it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from codectx.indexer.walk.discovery import discover

from codectx.privacy.policy import is_never_index, never_send_match
from codectx.settings import load_settings

# The two lists as they were before they became one (indexer/skiprules.py's NEVER_INDEX and
# codectx/privacy/policy.py's BUILTIN_NEVER_SEND), each with a path it refused.
OLD_NEVER_INDEX = {
    ".env": ".env",
    ".env.*": "config/.env.production",
    "*.env": "deploy/prod.env",
    ".envrc": ".envrc",
    "*.pem": "certs/server.pem",
    "*.key": "tls/site.key",
    "*.p12": "a.p12",
    "*.pfx": "b/c.pfx",
    "*.jks": "store.jks",
    "*.keystore": "android/release.keystore",
    "id_rsa*": "home/.ssh/id_rsa",
    "id_dsa*": "id_dsa.pub",
    "id_ecdsa*": "keys/id_ecdsa",
    "id_ed25519*": "home/.ssh/id_ed25519.pub",
    ".npmrc": ".npmrc",
    ".pypirc": "x/.pypirc",
    ".netrc": ".netrc",
    "_netrc": "_netrc",
    ".git-credentials": ".git-credentials",
    ".htpasswd": "web/.htpasswd",
    "*.tfstate": "infra/terraform.tfstate",
    "*.tfstate.*": "infra/terraform.tfstate.backup",
    "*.tfvars": "deploy/prod.tfvars",
    "*.tfvars.json": "deploy/prod.tfvars.json",
    "kubeconfig": "deploy/kubeconfig",
    "*.kubeconfig": "c.kubeconfig",
    "**/.kube/config": "home/.kube/config",
    "credentials*.json": "gcp/credentials-prod.json",
    "**/.aws/credentials": "home/.aws/credentials",
    "**/.docker/config.json": "home/.docker/config.json",
    "service-account*.json": "service-account.json",
    "*service-account*.json": "gcp/my-service-account-key.json",
    "*service_account*.json": "gcp/my_service_account.json",
}
OLD_NEVER_SEND_ONLY = {
    ".pgpass": "home/.pgpass",
    "*.kdbx": "vault/passwords.kdbx",
    "*.ovpn": "vpn/office.ovpn",
    "secrets.yml": "config/secrets.yml",
    "secrets.yaml": "secrets.yaml",
}
REFUSED = sorted({*OLD_NEVER_INDEX.values(), *OLD_NEVER_SEND_ONLY.values()})


@pytest.mark.parametrize("path", REFUSED)
def test_what_either_list_refused_is_neither_indexed_nor_sent(path: str) -> None:
    settings = load_settings(None, environ={})
    assert is_never_index(path, settings)
    assert never_send_match(path, settings) is not None
    assert is_never_index(path, None) and never_send_match(path, None) is not None


def test_a_negation_in_either_setting_allows_nothing_again() -> None:
    settings = load_settings(None, {"index.never_index": ["!.env", "!*.pem"]}, environ={})
    for path in (".env", "certs/server.pem"):
        assert is_never_index(path, settings)
        assert never_send_match(path, settings) is not None


def test_each_settings_list_refuses_for_both_and_ordinary_files_pass() -> None:
    settings = load_settings(
        None, {"index.never_index": ["*.secret.toml"], "privacy.never_send": ["internal/**"]}, environ={}
    )
    for path in ("x/app.secret.toml", "internal/billing/x.py"):
        assert is_never_index(path, settings)
        assert never_send_match(path, settings) in ("*.secret.toml", "internal/**")
    for path in ("src/environment.py", "docs/keys.md", "app/secrets.py", "README.md"):
        assert not is_never_index(path, settings)
        assert never_send_match(path, settings) is None


def test_discovery_skips_the_never_send_only_files_as_secret_files(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    for path in OLD_NEVER_SEND_ONLY.values():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("password: x\n")
    settings = load_settings(tmp_path, {"index.index_dir": str(tmp_path / ".idx")}, environ={})
    found = discover(tmp_path, settings)
    assert [f.path for f in found.files] == ["app.py"]
    skipped = {s.path: s.reason for s in found.skipped}
    assert all(skipped.get(path) == "secret-file" for path in OLD_NEVER_SEND_ONLY.values()), skipped


# Files an outside tester got sent (stop 51): credential files the list lacked, a name in other
# letter case (`.ENV` is `.env` on a case-insensitive file system), and git's own folder.
@pytest.mark.parametrize(
    "path",
    [
        ".ENV",
        "app/.Env.Local",
        "Secrets.yaml",
        ".vault-token",
        ".my.cnf",
        ".s3cfg",
        ".boto",
        ".dockercfg",
        ".dev.vars",
        "api/local.settings.json",
        ".streamlit/secrets.toml",
        "config/secrets.json",
        "home/.ssh/config",
        ".git/config",
        "vendor/lib/.git/HEAD",
        # Padded names (stop 53): Windows drops a name's trailing spaces and dots.
        ".env ",
        "app/.env.",
        "deploy/.pgpass ",
        "keys/id_rsa. ",
        # Review of stop 54: an NTFS stream after the name, a code point HFS+ ignores.
        ".env:stream",
        ".git::$INDEX_ALLOCATION/config",
        ".g\u200cit/config",
        # Red team 6 (L1): gcloud's application-default credentials, Composer's http-basic file,
        # Terraform's CLI credentials.
        ".config/gcloud/application_default_credentials.json",
        "home/.config/gcloud/legacy_credentials/me@example.com/adc.json",
        "auth.json",
        "home/.composer/auth.json",
        ".terraformrc",
        # Red team 7 (L06): a backup copy is what it copies.
        "composer/auth.json.bak",
        ".terraformrc.bak",
        "config/.env~",
        "keys/id_rsa.orig",
        "deploy/secrets.yml.old.bak",
    ],
)
def test_credential_files_in_any_letter_case_and_git_internals_are_refused(path: str) -> None:
    assert is_never_index(path, None)
    assert never_send_match(path, None) is not None


@pytest.mark.parametrize(
    "path",
    ["locales/en/auth.json", "src/auth.json.ts", "docs/terraform.md", "app/settings.py.bak", "~", ".bak"],
)
def test_files_named_like_credential_files_elsewhere_are_sent(path: str) -> None:
    assert never_send_match(path, None) is None


def test_a_user_pattern_in_another_letter_case_refuses_too() -> None:
    settings = load_settings(None, {"privacy.never_send": ["internal/**"]}, environ={})
    assert never_send_match("Internal/Billing.py", settings) == "internal/**"
    for path in (
        ".github/workflows/ci.yml",
        ".gitignore",
        ".gitattributes",
        "src/Environment.py",
        "notes. /a.py",
    ):
        assert never_send_match(path, settings) is None


def test_the_git_folder_is_known_in_every_file_systems_spelling() -> None:
    """What git itself refuses as `.git` on NTFS and HFS+ (is_ntfs_dotgit, is_hfs_dotgit)."""
    from codectx.privacy.policy import is_dot_git

    for part in (".git", ".GIT", ".git.", ".git ", "GIT~1", "git~2", ".g\u200cit", ".git::$INDEX_ALLOCATION"):
        assert is_dot_git(part), part
    for part in (".github", ".gitignore", "git", "digit~1", "notes:2024.txt"):
        assert not is_dot_git(part), part
