"""Discovery rules on real folders: ignore files, never-index list, skips, symlinks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from codectx.indexer.walk.content import read_source
from codectx.indexer.walk.discovery import (
    DiscoveryError,
    discover,
    discover_files,
    is_never_index,
)

from codectx.settings import load_settings


def _w(root: Path, rel: str, text: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _run(root: Path, **overrides: object) -> tuple[set[str], dict[str, str]]:
    settings = load_settings(root, {f"index.{k}": v for k, v in overrides.items()})
    found = discover(root, settings)
    return {f.path for f in found.files}, {s.path: s.reason for s in found.skipped}


def test_plain_folder_without_git(tmp_path: Path) -> None:
    _w(tmp_path, "a.py")
    _w(tmp_path, "pkg/b.ts", "export const b = 1;\n")
    _w(tmp_path, "docs/guide.md", "# Guide\n")
    _w(tmp_path, "image.png", b"\x89PNG\r\n\x1a\n\0\0")
    files, skipped = _run(tmp_path)
    assert files == {"a.py", "pkg/b.ts", "docs/guide.md"}
    assert skipped["image.png"] in ("unsupported", "binary")
    found = discover(tmp_path, load_settings(tmp_path))
    by_path = {f.path: f for f in found.files}
    assert by_path["pkg/b.ts"].language == "typescript"
    assert by_path["a.py"].size == 6 and by_path["a.py"].abs_path == (tmp_path / "a.py").resolve()
    assert by_path["a.py"].mtime_ns == os.stat(tmp_path / "a.py").st_mtime_ns


def test_nested_gitignore_is_relative_to_its_folder(tmp_path: Path) -> None:
    _w(tmp_path, ".gitignore", "*.log.py\n/top_only.py\n")
    _w(tmp_path, "top_only.py")
    _w(tmp_path, "sub/top_only.py")  # anchored pattern: only the root one is ignored
    _w(tmp_path, "sub/.gitignore", "generated_*.py\n!keep.log.py\n")
    _w(tmp_path, "sub/generated_x.py")
    _w(tmp_path, "generated_y.py")  # the nested rule does not reach up
    _w(tmp_path, "sub/keep.log.py")  # re-included by the deeper file
    _w(tmp_path, "sub/drop.log.py")
    _w(tmp_path, "sub/deeper/generated_z.py")
    files, _ = _run(tmp_path)
    assert files == {"sub/top_only.py", "generated_y.py", "sub/keep.log.py"}


def test_ignored_directory_is_pruned(tmp_path: Path) -> None:
    _w(tmp_path, ".gitignore", "cache/\n")
    _w(tmp_path, "cache/a.py")
    _w(tmp_path, "cache/.gitignore", "!a.py\n")  # git cannot re-include inside an excluded folder
    _w(tmp_path, "ok.py")
    files, _ = _run(tmp_path)
    assert files == {"ok.py"}


def test_git_info_exclude_and_codectxignore_and_settings_exclude(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local_only.py\n")
    _w(tmp_path, ".gitignore", "vendored/\n")
    _w(tmp_path, ".codectxignore", "fixtures/**\n")
    _w(tmp_path, "lib/.codectxignore", "big_table.py\n")
    _w(tmp_path, "local_only.py")
    _w(tmp_path, "fixtures/sample.py")
    _w(tmp_path, "lib/big_table.py")
    _w(tmp_path, "lib/core.py")
    _w(tmp_path, "scratch/tmp.py")
    _w(tmp_path, "main.py")
    files, _ = _run(tmp_path, exclude=["scratch/"])
    assert files == {"lib/core.py", "main.py"}
    assert not any(p.startswith(".git/") for p in files)


def test_never_index_beats_negation_and_is_reported(tmp_path: Path) -> None:
    _w(tmp_path, ".gitignore", "!.env\n!*.pem\n")
    _w(tmp_path, ".codectxignore", "!secrets/\n")
    _w(tmp_path, ".env", "API_KEY=abc\n")
    _w(tmp_path, ".env.production", "API_KEY=abc\n")
    _w(tmp_path, "config/.env.example", "API_KEY=\n")
    _w(tmp_path, "certs/server.pem", "-----BEGIN PRIVATE KEY-----\n")
    _w(tmp_path, "home/.ssh/id_rsa", "key\n")
    _w(tmp_path, "home/.ssh/id_ed25519.pub", "key\n")
    _w(tmp_path, "deploy/prod.tfvars", "x = 1\n")
    _w(tmp_path, "deploy/terraform.tfstate", "{}\n")
    _w(tmp_path, "gcp/credentials-prod.json", "{}\n")
    _w(tmp_path, ".npmrc", "//registry:_authToken=x\n")
    _w(tmp_path, "deploy/kubeconfig", "apiVersion: v1\n")
    _w(tmp_path, "team/private.yaml", "token: x\n")
    _w(tmp_path, "app.py")
    files, skipped = _run(tmp_path, never_index=["team/private.yaml"])
    assert files == {"app.py"}
    for rel in (
        ".env",
        ".env.production",
        "config/.env.example",
        "certs/server.pem",
        "home/.ssh/id_rsa",
        "home/.ssh/id_ed25519.pub",
        "deploy/prod.tfvars",
        "deploy/terraform.tfstate",
        "gcp/credentials-prod.json",
        ".npmrc",
        "deploy/kubeconfig",
        "team/private.yaml",
    ):
        assert skipped[rel] == "secret-file", rel


def test_is_never_index_for_privacy() -> None:
    settings = load_settings(None, {"index.never_index": ["*.secret.toml"]})
    assert is_never_index(".env", settings)
    assert is_never_index("a/b/.env.local", settings)
    assert is_never_index("./keys/tls.key", settings)
    assert is_never_index("x/app.secret.toml", settings)
    assert is_never_index("home/.kube/config", settings)
    assert not is_never_index("src/environment.py", settings)
    assert not is_never_index("docs/keys.md", settings)
    assert not is_never_index("x/app.secret.toml", load_settings(None))


def test_default_skips(tmp_path: Path) -> None:
    _w(tmp_path, "bin.py", b"abc\0def")
    _w(tmp_path, "huge.py", "x = 1\n" * 5000)
    _w(tmp_path, "app.min.js", "var a=1;")
    _w(tmp_path, "vendor-lib.js", "var a=1;" * 1000)  # minified by line length
    _w(tmp_path, "gen.py", "# @generated by a tool\nx = 1\n")
    _w(tmp_path, "api.pb.go", "package api\n")
    _w(tmp_path, "models_pb2.py", "x = 1\n")
    _w(tmp_path, "zz.go", "// Code generated by stringer. DO NOT EDIT.\npackage x\n")
    for lock in ("package-lock.json", "yarn.lock", "poetry.lock", "Cargo.lock", "go.sum", "uv.lock"):
        _w(tmp_path, f"locks/{lock}", "{}\n")
    _w(tmp_path, "node_modules/left-pad/index.js", "module.exports = 1;\n")
    _w(tmp_path, ".venv/lib/site.py")
    _w(tmp_path, "env3/pyvenv.cfg", "home = /usr\n")
    _w(tmp_path, "env3/lib/x.py")
    _w(tmp_path, "build/out.py")
    _w(tmp_path, "pkg/__pycache__/m.py")
    _w(tmp_path, "target/debug/x.rs", "fn main() {}\n")
    _w(tmp_path, ".codectx/chunks.py")
    _w(tmp_path, "static/js/vendor/jquery.js", "var $ = 1;\n")
    _w(tmp_path, "ok.py")
    files, skipped = _run(tmp_path, max_file_bytes=20_000)
    assert files == {"ok.py"}
    assert skipped["bin.py"] == "binary"
    assert skipped["huge.py"] == "too-large"
    assert skipped["app.min.js"] == "minified" and skipped["vendor-lib.js"] == "minified"
    assert (
        skipped["gen.py"]
        == skipped["api.pb.go"]
        == skipped["models_pb2.py"]
        == skipped["zz.go"]
        == "generated"
    )
    assert all(skipped[f"locks/{n}"] == "lockfile" for n in ("package-lock.json", "yarn.lock", "go.sum"))
    for folder in (
        "node_modules/",
        ".venv/",
        "env3/",
        "build/",
        "pkg/__pycache__/",
        "target/",
        "static/js/vendor/",
    ):
        assert skipped[folder] == "ignored", folder
    assert ".codectx/" not in skipped  # the index folder is silently skipped


def test_custom_index_dir_is_skipped(tmp_path: Path) -> None:
    _w(tmp_path, "store/data.py")
    _w(tmp_path, "ok.py")
    files, _ = _run(tmp_path, index_dir=str(tmp_path / "store"))
    assert files == {"ok.py"}


def test_shebang_scripts_without_extension(tmp_path: Path) -> None:
    _w(tmp_path, "bin/tool", "#!/usr/bin/env python3\nprint(1)\n")
    _w(tmp_path, "bin/run", "#!/bin/bash\necho hi\n")
    _w(tmp_path, "bin/blob", "no shebang\n")
    found = discover(tmp_path, load_settings(tmp_path))
    langs = {f.path: f.language for f in found.files}
    assert langs == {"bin/tool": "python", "bin/run": "bash"}


def test_symlink_out_of_root_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _w(outside, "secret_code.py")
    root = tmp_path / "ws"
    _w(root, "a.py")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    (root / "linkfile.py").symlink_to(outside / "secret_code.py")
    (root / "dangling.py").symlink_to(root / "missing.py")
    files, skipped = _run(root)
    assert files == {"a.py"}
    assert skipped["linkdir"] == skipped["linkfile.py"] == "symlink-outside-root"
    assert skipped["dangling.py"] == "broken-symlink"


def test_symlink_inside_root_is_resolved(tmp_path: Path) -> None:
    _w(tmp_path, "real/mod.py")
    (tmp_path / "alias.py").symlink_to(tmp_path / "real" / "mod.py")
    files, _ = _run(tmp_path)
    assert files == {"real/mod.py", "alias.py"}


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    _w(tmp_path, "a/b/x.py")
    (tmp_path / "a" / "b" / "up").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "self").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    files, skipped = _run(tmp_path)
    assert files == {"a/b/x.py"}
    assert skipped["a/b/up/"] == "symlink-loop" and skipped["self/"] == "symlink-loop"
    assert skipped["l1"] == skipped["l2"] == "symlink-loop"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file_does_not_stop_discovery(tmp_path: Path) -> None:
    bad = _w(tmp_path, "locked.py")
    bad.chmod(0)
    _w(tmp_path, "ok.py")
    try:
        files, skipped = _run(tmp_path)
    finally:
        bad.chmod(0o600)
    assert files == {"ok.py"} and skipped["locked.py"] == "unreadable"


def test_invalid_utf8_is_read_with_replacement(tmp_path: Path) -> None:
    path = _w(tmp_path, "latin.py", b"\xef\xbb\xbfname = 'caf\xe9'\n")
    files, _ = _run(tmp_path)
    assert files == {"latin.py"}
    assert read_source(path) == "name = 'caf\ufffd'\n"


def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match="does not exist"):
        discover(tmp_path / "nope", load_settings(None))
    _w(tmp_path, "file.py")
    with pytest.raises(DiscoveryError, match="not a folder"):
        discover(tmp_path / "file.py", load_settings(None))


def test_discover_files_checks_single_paths_like_the_walk(tmp_path: Path) -> None:
    _w(tmp_path, ".gitignore", "logs/\n*.tmp.py\n")
    _w(tmp_path, "src/.gitignore", "local.py\n")
    _w(tmp_path, "src/app.py")
    _w(tmp_path, "src/local.py")
    _w(tmp_path, "src/x.tmp.py")
    _w(tmp_path, "logs/today.py")
    _w(tmp_path, "node_modules/pkg/index.js", "x\n")
    _w(tmp_path, ".env", "A=1\n")
    _w(tmp_path, "blob.py", b"\0\0")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.py"
    outside.write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to(outside)
    settings = load_settings(tmp_path)
    paths = [
        "src/app.py",
        "./src/local.py",
        "src/x.tmp.py",
        "logs/today.py",
        "node_modules/pkg/index.js",
        ".env",
        "blob.py",
        "gone.py",
        "../escape.py",
        "link.py",
        "src",
    ]
    found = discover_files(tmp_path, settings, paths)
    assert [f.path for f in found.files] == ["src/app.py"]
    assert {s.path: s.reason for s in found.skipped} == {
        "src/local.py": "ignored",
        "src/x.tmp.py": "ignored",
        "logs/today.py": "ignored",
        "node_modules/pkg/index.js": "ignored",
        ".env": "secret-file",
        "blob.py": "binary",
        "gone.py": "missing",
        "../escape.py": "outside-root",
        "link.py": "symlink-outside-root",
        "src": "not-a-file",
    }
    # The same verdicts as a full walk for the files the walk finds.
    walked = discover(tmp_path, settings)
    assert {f.path for f in walked.files} == {"src/app.py"}


def test_known_unchanged_files_are_not_sniffed_again(tmp_path: Path) -> None:
    path = _w(tmp_path, "a.py")
    st = os.stat(path)
    settings = load_settings(tmp_path)
    # A file indexed before keeps its place without being reopened...
    path.write_bytes(b"x = 1\0")  # same size, then restore the old mtime: content sniff would say binary
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    found = discover(tmp_path, settings, known={"a.py": (st.st_size, st.st_mtime_ns)})
    assert [f.path for f in found.files] == ["a.py"]
    # ...but any change of size or mtime brings the full check back.
    found = discover(tmp_path, settings, known={"a.py": (st.st_size, st.st_mtime_ns + 1)})
    assert found.files == [] and found.skipped[0].reason == "binary"


def test_cpp_headers_are_told_from_c_headers(tmp_path: Path) -> None:
    _w(tmp_path, "c_api.h", "#include <stdio.h>\nint add(int a, int b);\n")
    _w(tmp_path, "shape.h", "#pragma once\nnamespace geo {\nclass Shape {\n};\n}\n")
    _w(tmp_path, "vec.h", "#include <vector>\nstd::vector<int> v;\n")
    found = discover(tmp_path, load_settings(tmp_path))
    assert {f.path: f.language for f in found.files} == {"c_api.h": "c", "shape.h": "cpp", "vec.h": "cpp"}
