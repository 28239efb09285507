"""The license: a LICENSE file at the root that matches the license pyproject and
the TypeScript package declare, shipped in the Python sdist and wheel and in the
npm package (a copy in the package's folder, the same text)."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSE = ROOT / "LICENSE"
TS_PACKAGE = ROOT / "clients" / "typescript"


def test_the_license_file_is_the_apache_2_license_that_pyproject_and_npm_declare():
    text = LICENSE.read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License\n")
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a notice
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    assert "LICENSE" in project["license-files"]
    package = json.loads((TS_PACKAGE / "package.json").read_text(encoding="utf-8"))
    assert package["license"] == "Apache-2.0"
    assert (TS_PACKAGE / "LICENSE").read_text(encoding="utf-8") == text


def test_the_sdist_and_the_wheel_carry_the_license(tmp_path: Path):
    # Built from a copy, so that the build's egg-info and build/ stay out of the tree.
    source = tmp_path / "src-tree"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
    from setuptools import build_meta

    out = tmp_path / "dist"
    out.mkdir()
    here = Path.cwd()
    os.chdir(source)
    try:
        sdist = build_meta.build_sdist(str(out))
        wheel = build_meta.build_wheel(str(out))
    finally:
        os.chdir(here)
    with tarfile.open(out / sdist) as archive:
        names = archive.getnames()
        assert "memchentic-0.1.0/LICENSE" in names, names
    with zipfile.ZipFile(out / wheel) as archive:
        licensed = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert licensed, archive.namelist()
        assert archive.read(licensed[0]).decode("utf-8") == LICENSE.read_text(encoding="utf-8")
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        assert "License-Expression: Apache-2.0" in archive.read(metadata).decode("utf-8")
