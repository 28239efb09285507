"""Logs as JSON lines (issue 34, item 5): ``LOG_FORMAT=json`` makes ``memchentic
serve`` and the CLI write one JSON object a line (time, level, logger, message,
exception), and an API key never reaches a line."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memchentic.logs import JsonFormatter, configure, uvicorn_config

KEY = "mck_" + "Zq3" * 14


def _record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise RuntimeError(f"the request with {KEY} failed")
        except RuntimeError:
            info = sys.exc_info()
    return logging.LogRecord("memchentic.server", logging.ERROR, __file__, 1, message, args, info)


def test_a_record_is_one_json_object_with_its_exception() -> None:
    line = JsonFormatter().format(_record("write %s failed", "m1", exc=True))
    assert "\n" not in line
    entry = json.loads(line)
    assert set(entry) == {"time", "level", "logger", "message", "exception"}
    assert (entry["level"], entry["logger"], entry["message"]) == (
        "ERROR", "memchentic.server", "write m1 failed",
    )  # fmt: skip
    assert entry["time"].endswith("+00:00")
    assert "RuntimeError" in entry["exception"] and "Traceback" in entry["exception"]


def test_an_api_key_never_reaches_a_line() -> None:
    for record in (_record("key %s rejected", KEY), _record("Authorization: Bearer %s", KEY),
                   _record("boom", exc=True)):  # fmt: skip
        line = JsonFormatter().format(record)
        assert KEY not in line and KEY[4:] not in line
        assert "[redacted]" in line


def test_text_is_left_to_uvicorn_and_python() -> None:
    assert uvicorn_config("text") is None
    before = list(logging.getLogger("memchentic").handlers)
    configure("text")
    assert logging.getLogger("memchentic").handlers == before


def test_the_cli_logs_json_lines_with_the_setting(tmp_path: Path) -> None:
    from memchentic import Memory
    from memchentic.cli import app

    Memory(store=str(tmp_path / "m.db"), embedder="hash").close()  # stats reads a store
    logger = logging.getLogger("memchentic")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    try:
        result = CliRunner().invoke(
            app, ["stats", "--store", str(tmp_path / "m.db"), "--embedder", "hash"],
            env={"LOG_FORMAT": "json", "MEMCHENTIC_HOME": str(tmp_path)},
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        json_handlers = [h for h in logger.handlers if isinstance(h.formatter, JsonFormatter)]
        assert len(json_handlers) == 1
        assert logger.propagate is False
    finally:
        logger.handlers, logger.level, logger.propagate = saved


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_writes_json_lines(tmp_path: Path) -> None:
    """``memchentic serve`` with ``LOG_FORMAT=json``: every line uvicorn writes (start,
    access) is a JSON object, and the key sent with a request is in none."""
    pytest.importorskip("uvicorn")
    exe = shutil.which("memchentic", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the memchentic console script is not installed")
    from .live_server import seed

    mem, keys = seed(tmp_path / "memory.db")
    mem.close()
    port = _free_port()
    env = {**os.environ, "LOG_FORMAT": "json", "MEMCHENTIC_HOME": str(tmp_path / "home")}
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [exe, "serve", "--store", str(tmp_path / "memory.db"), "--embedder", "hash",
         "--port", str(port), "--no-console", "--no-mcp"],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {keys['alice']}"}
        assert httpx.post(url + "/v1/search", json={"query": "tea"}, headers=headers).is_success
        assert httpx.get(url + "/v1/me", headers={"Authorization": "Bearer mck_bad"}).status_code
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    lines = [line for line in (tmp_path / "serve.log").read_text().splitlines() if line]
    entries = [json.loads(line) for line in lines]  # every line, the banner too
    assert entries and all({"time", "level", "logger", "message"} <= set(e) for e in entries)
    assert any(e["logger"] == "uvicorn.access" and "/v1/search" in e["message"] for e in entries)
    assert any(e["logger"] == "uvicorn.error" for e in entries)
    assert any(e["logger"] == "memchentic.serve" and "serving" in e["message"] for e in entries)
    assert keys["alice"] not in "\n".join(lines)
