"""bench/http_load.py (issue 36, item 4): the grid on a tiny store, SQLite only.

No timing is asserted: only that every row of the grid came back, with positive
rates and no errors, and that the server rows are compared with the library's."""

from __future__ import annotations

import json
from pathlib import Path

from bench import http_load


def test_the_grid_runs_the_library_and_the_server_at_each_concurrency(tmp_path: Path, capsys):
    out = tmp_path / "grid.json"
    code = http_load.main([
        "--matrix", "--backends", "sqlite", "--clients-list", "1,2", "--workers-list", "1",
        "--duration", "0.5", "--seed", "30", "--json", str(out),
    ])  # fmt: skip
    assert code == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["mode"], r["workers"], r["clients"]) for r in rows] == [
        ("library", None, 1), ("library", None, 2), ("server", 1, 1), ("server", 1, 2),
    ]  # fmt: skip
    for r in rows:
        assert r["backend"] == "sqlite" and r["errors"] == 0
        assert r["requests_per_second"] > 0 and r["search"]["count"] > 0
        assert r["search"]["p95_ms"] > 0
    text = capsys.readouterr().out
    assert "server over library" in text and text.count("p95 x") == 2
