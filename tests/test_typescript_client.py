"""The TypeScript client's own tests (``clients/typescript``, issue 34, item 4), run
from the README's test command: ``npm ci`` then ``npm test``, which builds the
package, type-checks its option types and runs ``node --test`` against a real
``memchentic serve`` (this venv's CLI, through ``MEMCHENTIC_BIN``), the Vercel AI
SDK example included. Skipped, saying why, where Node.js or npm is missing.

And the package as a user installs it (issue 45, item 2): ``npm pack``'s tarball
and the bare folder (no ``node_modules``, no ``dist``: a fresh clone), each
installed into a fresh project and used from ``import`` and from ``require``
against a real server. npm runs offline where it can: the tarball has no
dependencies, and the folder's build takes TypeScript from npm's cache, filled
by ``npm ci``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="module")
def npm_env() -> dict[str, str]:
    """The package's devDependencies installed (``npm ci``, which builds it too), and
    the environment for npm and node: the venv's CLI, no audit, fund or update
    notices, npm's cache before the network."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not on PATH: the TypeScript client's tests need them")
    if _node_major(node) < NODE_MAJOR:
        pytest.skip(f"the TypeScript client needs Node.js >= {NODE_MAJOR}")
    cli = Path(sys.executable).parent / "memchentic"
    assert cli.exists(), f"memchentic's CLI is not installed beside {sys.executable}"
    env = {**os.environ, "MEMCHENTIC_BIN": str(cli), "HF_HUB_OFFLINE": "1",
           "npm_config_audit": "false", "npm_config_fund": "false",
           "npm_config_update_notifier": "false", "npm_config_prefer_offline": "true",
           "NPM": npm, "NODE": node}  # fmt: skip
    install = ["ci"] if (PACKAGE / "package-lock.json").exists() else ["install"]
    done = _run([npm, *install], env, timeout=600)
    output = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"npm {install[0]} failed:\n{output}"
    return env


def test_the_typescript_client_passes_its_tests_against_a_real_server(npm_env: dict[str, str]):
    done = _run([npm_env["NPM"], "test"], npm_env, timeout=900)
    report = f"{done.stdout[-8000:]}\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"npm test failed:\n{report}"
    assert "# fail 0" in done.stdout and "# pass " in done.stdout, report


#: A user's first script, as ES module and as CommonJS: add, then search for it.
ESM_USE = """
import { Memchentic, NotFoundError } from "memchentic";
const mem = new Memchentic({ baseUrl: process.env.URL, apiKey: process.env.KEY });
const written = await mem.add(process.env.TEXT, { tags: ["packaged"] });
const hits = await mem.search(process.env.TEXT, { limit: 3 });
let typed = false;
try { await mem.get("no-such-memory"); } catch (error) { typed = error instanceof NotFoundError; }
const found = hits.map((h) => h.id);
console.log(JSON.stringify({ status: written.status, id: written.id, found, typed }));
"""
CJS_USE = """
const { Memchentic, NotFoundError } = require("memchentic");
(async () => {
  const mem = new Memchentic({ baseUrl: process.env.URL, apiKey: process.env.KEY });
  const written = await mem.add(process.env.TEXT, { tags: ["packaged"] });
  const hits = await mem.search(process.env.TEXT, { limit: 3 });
  let typed = false;
  try { await mem.get("no-such-memory"); } catch (error) { typed = error instanceof NotFoundError; }
  const found = hits.map((h) => h.id);
console.log(JSON.stringify({ status: written.status, id: written.id, found, typed }));
})().catch((error) => { console.error(error); process.exit(1); });
"""


def _project(folder: Path, source: str, env: dict[str, str]) -> Path:
    """A fresh npm project in ``folder`` with ``source`` (a tarball or a folder) installed."""
    folder.mkdir()
    (folder / "package.json").write_text(json.dumps({"name": "user-project", "private": True}))
    done = subprocess.run([env["NPM"], "install", source], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, f"npm install {source} failed:\n{done.stdout}\n{done.stderr}"
    return folder


def _use(project: Path, live: Any, env: dict[str, str]) -> None:
    """The package works from ``import`` and from ``require``: each adds a memory as
    alice, finds it by search, and gets a typed error; the server holds both."""
    (project / "use.mjs").write_text(ESM_USE)
    (project / "use.cjs").write_text(CJS_USE)
    for script, text in (("use.mjs", "Alice keeps her bike in shed four"),
                         ("use.cjs", "Alice waters the ferns on Sundays")):  # fmt: skip
        run_env = {**env, "URL": live.url, "KEY": live.keys["alice"], "TEXT": text}
        done = subprocess.run([env["NODE"], script], cwd=project, env=run_env,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, f"node {script} failed:\n{done.stdout}\n{done.stderr}"
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        assert answer["status"] == "added", answer
        assert answer["id"] in answer["found"], answer
        assert answer["typed"] is True, answer
        stored = live.mem.get(answer["id"])
        assert stored.content == text and stored.namespace == "user:alice"


def test_the_packed_tarball_installs_and_works_from_import_and_require(
    npm_env: dict[str, str], live: Any, tmp_path: Path
):
    done = _run([npm_env["NPM"], "pack", "--json", "--pack-destination", str(tmp_path)],
                npm_env, timeout=600)  # fmt: skip
    assert done.returncode == 0, f"npm pack failed:\n{done.stdout}\n{done.stderr}"
    packed = json.loads(done.stdout[done.stdout.index("[") :])[0]
    files = {entry["path"] for entry in packed["files"]}
    needs = ("LICENSE", "README.md", "package.json", "dist/index.js", "dist/index.d.ts",
             "dist/cjs/index.js", "dist/cjs/index.d.ts", "dist/cjs/package.json")  # fmt: skip
    for needed in needs:
        assert needed in files, sorted(files)
    assert not any(path.startswith(("test/", "node_modules/")) for path in files), sorted(files)
    project = _project(tmp_path / "from-tarball", str(tmp_path / packed["filename"]), npm_env)
    manifest = json.loads((project / "node_modules" / "memchentic" / "package.json").read_text())
    for field in ("repository", "homepage", "bugs", "license"):
        assert manifest.get(field), field
    readme = (project / "node_modules" / "memchentic" / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)", readme)
    relative = [link for link in links if not link.startswith(("https://", "#"))]
    assert not relative, f"README links that break off the repository: {relative}"
    _use(project, live, npm_env)


def test_the_bare_folder_installs_and_works_from_import_and_require(
    npm_env: dict[str, str], live: Any, tmp_path: Path
):
    # A fresh clone's folder: no node_modules and no dist; `prepare` builds it.
    folder = tmp_path / "typescript"
    shutil.copytree(PACKAGE, folder, ignore=shutil.ignore_patterns("node_modules", "dist"))
    project = _project(tmp_path / "from-folder", str(folder), npm_env)
    _use(project, live, npm_env)
