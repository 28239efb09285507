"""bench/instructions.py (issue 36, item 5): the pipeline on tiny stores.

The first test runs the whole pipeline (build, native recording run, the N-run and
the 0-run, the table) with a stand-in for valgrind that runs the child natively
and reports a count from the job, so the shape is checked in seconds. The second
runs it under the real callgrind: about a minute (the interpreter's start-up alone
is some 17 s under callgrind, twice per figure), so it runs only with
``MEMCHENTIC_BENCH_VALGRIND=1`` and where valgrind is installed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from bench import instructions

FAKE_VALGRIND = """#!{python}
import json, subprocess, sys
args = sys.argv[1:]
out = next(a.split("=", 1)[1] for a in args if a.startswith("--callgrind-out-file="))
cmd = [a for a in args if not (a.startswith("--") and a != "--child")]
done = subprocess.run(cmd)
job = json.load(open(cmd[cmd.index("--child") + 1]))
open(out, "w").write("events: Ir\\ntotals: %d\\n" % (10**9 + 7 * 10**6 * job["count"]))
sys.exit(done.returncode)
"""


def _fake_valgrind(folder: Path) -> Path:
    path = folder / "valgrind"
    path.write_text(FAKE_VALGRIND.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    report = tmp_path / "report.json"
    code = instructions.main([
        "--quick", "--repeat", "1", "--results", str(tmp_path / "stores"),
        "--recorded", str(tmp_path / "recorded.json"), "--json", str(report), *extra,
    ])  # fmt: skip
    assert code == 0
    return json.loads(report.read_text())


def test_the_pipeline_counts_each_call_and_compares_with_the_record(tmp_path, capsys):
    fake = str(_fake_valgrind(tmp_path))
    first = _run(tmp_path, capsys, "--valgrind", fake, "--record", "--only", "search@300")
    (row,) = first["runs"]
    assert row["name"] == "search@300" and row["calls"] == 2
    assert row["instructions"] == 7 * 10**6  # (N-run minus 0-run) / N
    assert row["n_run"] > row["zero_run"] > 0
    recorded = json.loads((tmp_path / "recorded.json").read_text())
    assert set(recorded["figures"]) == {"search@300"}
    capsys.readouterr()
    instructions.print_table(first["runs"], instructions._recorded(tmp_path / "recorded.json"))
    table = capsys.readouterr().out
    assert "search@300" in table and "1.000" in table  # the ratio to the recorded figure


def test_every_figure_has_its_inputs():
    inputs = {"queries": [f"q{i}" for i in range(16)], "texts": [f"t{i}" for i in range(1200)]}
    for spec in (*instructions.FULL, *instructions.QUICK):
        calls = instructions._calls(spec, inputs)
        assert len(calls) == spec.count + 1  # the warm-up call, then the measured ones
        if spec.op == "add_many":
            assert all(len(batch) == spec.batch for batch in calls[1:])


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.skipif(
    os.environ.get("MEMCHENTIC_BENCH_VALGRIND") != "1",
    reason="about a minute under callgrind: set MEMCHENTIC_BENCH_VALGRIND=1",
)
def test_callgrind_counts_an_add(tmp_path, capsys):
    report = _run(tmp_path, capsys, "--only", "add")
    (row,) = report["runs"]
    assert row["instructions"] > 0 and row["n_run"] > row["zero_run"]
