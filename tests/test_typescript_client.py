"""The TypeScript client's own tests (``clients/typescript``, issue 34, item 4), run
from the README's test command: ``npm ci`` then ``npm test``, which builds the
package, type-checks its option types and runs ``node --test`` against a real
``memchentic serve`` (this venv's CLI, through ``MEMCHENTIC_BIN``), the Vercel AI
SDK example included. Skipped, saying why, where Node.js or npm is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "clients" / "typescript"
#: Node 20 is the oldest the package supports (package.json "engines").
NODE_MAJOR = 20


def _node_major(node: str) -> int:
    found = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    return int(found.stdout.strip().lstrip("v").split(".")[0])


def _run(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=PACKAGE, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def test_the_typescript_client_passes_its_tests_against_a_real_server():
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not on PATH: the TypeScript client's tests need them")
    if _node_major(node) < NODE_MAJOR:
        pytest.skip(f"the TypeScript client needs Node.js >= {NODE_MAJOR}")
    cli = Path(sys.executable).parent / "memchentic"
    assert cli.exists(), f"memchentic's CLI is not installed beside {sys.executable}"
    env = {**os.environ, "MEMCHENTIC_BIN": str(cli), "HF_HUB_OFFLINE": "1",
           "npm_config_audit": "false", "npm_config_fund": "false",
           "npm_config_update_notifier": "false"}  # fmt: skip
    install = ["ci"] if (PACKAGE / "package-lock.json").exists() else ["install"]
    done = _run([npm, *install], env, timeout=600)
    output = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"npm {install[0]} failed:\n{output}"
    done = _run([npm, "test"], env, timeout=900)
    report = f"{done.stdout[-8000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"npm test failed:\n{report}"
    assert "# fail 0" in done.stdout and "# pass " in done.stdout, report
