"""HTTP load: N concurrent clients against ``memchentic serve`` on loopback.

Each client is a thread with its own keep-alive connection, running a 90/10 mix
of searches (``POST /v1/search``, limit 10) and adds (``POST /v1/memories``,
new distinct texts) for a fixed time. Reported: requests per second, p50 / p95
/ p99 latency (overall and per operation) and errors (any answer other than
200, or a transport failure).

By default it builds a fresh store (SQLite in a temporary folder, or
``--store`` as a path or ``postgresql://`` URL) with ``--seed`` memories for one
identity, creates a key, starts ``memchentic serve --workers W`` on a free port
and stops it afterwards. ``--url`` and ``--key`` aim it at a running server
instead. The embedder defaults to ``hash`` (no model is timed).

Usage::

    python bench/http_load.py                                  # 8 clients, 30 s
    python bench/http_load.py --clients 16 --workers 2 --duration 60
    python bench/http_load.py --store postgresql://localhost/bench --workers 4
    python bench/http_load.py --url http://127.0.0.1:8077 --key mck_...

Note that the clients share the machine with the server: on a small machine the
figures measure both.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

SUBJECTS = ("Alice", "Bob", "the team", "the API", "the build", "the client", "Dana", "ops")
VERBS = ("prefers", "needs", "changed", "reviewed", "deployed", "documented", "broke", "fixed")
OBJECTS = ("green tea", "the staging database", "the Monday meeting", "the release notes",
           "the login page", "rate limits", "the March deadline", "the billing service",
           "unit tests", "the onboarding guide", "dark mode", "the search index")  # fmt: skip
QUESTIONS = ("what does alice prefer", "who fixed the login page", "when is the deadline",
             "what broke the build", "how are rate limits set", "who deployed billing",
             "what is in the release notes", "which database is staging")  # fmt: skip


def sentence(rng: random.Random, n: int) -> str:
    return (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"(note {n}, ref {rng.randrange(10**6)})")  # fmt: skip


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


class Server:
    """A store seeded for the run and ``memchentic serve`` over it."""

    def __init__(self, args: argparse.Namespace) -> None:
        from memchentic import Memory
        from memchentic.server.auth import KeyRing

        self.folder = Path(tempfile.mkdtemp(prefix="memchentic-load-"))
        self.store = args.store or str(self.folder / "memory.db")
        rng = random.Random(args.random_seed)
        with Memory(store=self.store, embedder=args.embedder) as mem:
            if mem.store.find_identity("bench", "user") is None:
                mem.directory.create_identity("bench")
            self.key = KeyRing(mem.store).create(identity="bench", name="http-load")[0]
            view = mem.for_identity("bench")
            for start in range(0, args.seed, 500):
                batch = [sentence(rng, i) for i in range(start, min(args.seed, start + 500))]
                view.add_many(batch, on_duplicate="keep")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        exe = shutil.which("memchentic", path=str(Path(sys.executable).parent)) or "memchentic"
        self.log = (self.folder / "serve.log").open("w")
        self.proc = subprocess.Popen(
            [exe, "serve", "--store", self.store, "--embedder", args.embedder, "--port", str(port),
             "--workers", str(args.workers), "--log-level", "warning"],
            stdout=self.log, stderr=subprocess.STDOUT,
            env={**os.environ, "MEMCHENTIC_HOME": str(self.folder / "home")},
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError(f"the server did not start; see {self.folder / 'serve.log'}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def run_load(url: str, key: str, clients: int, duration: float, seed: int) -> dict[str, Any]:
    """Run the mix; returns the figures."""
    latencies: dict[str, list[float]] = {"search": [], "add": []}
    errors: dict[str, int] = {}
    lock = threading.Lock()
    start_gate = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        local: dict[str, list[float]] = {"search": [], "add": []}
        failed: dict[str, int] = {}
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            http.get("/v1/me")  # open the connection before the clock starts
            start_gate.wait()
            i = 0
            while time.monotonic() < stop_at[0]:
                i += 1
                if rng.random() < 0.9:
                    op, path = "search", "/v1/search"
                    body: dict[str, Any] = {"query": rng.choice(QUESTIONS), "limit": 10}
                else:
                    op, path = "add", "/v1/memories"
                    body = {"content": sentence(rng, 10**7 + n * 10**5 + i),
                            "on_duplicate": "keep"}  # fmt: skip
                began = time.perf_counter()
                try:
                    status = http.post(path, json=body).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__  # type: ignore[assignment]
                local[op].append(time.perf_counter() - began)
                if status != 200:
                    failed[f"{op}:{status}"] = failed.get(f"{op}:{status}", 0) + 1
        with lock:
            for op, values in local.items():
                latencies[op].extend(values)
            for name, count in failed.items():
                errors[name] = errors.get(name, 0) + count

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.monotonic() + duration + 0.05
    began = time.monotonic()
    start_gate.wait()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    every = latencies["search"] + latencies["add"]

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "count": len(values),
            "p50_ms": round(percentile(values, 50) * 1000, 2),
            "p95_ms": round(percentile(values, 95) * 1000, 2),
            "p99_ms": round(percentile(values, 99) * 1000, 2),
            "mean_ms": round(statistics.fmean(values) * 1000, 2) if values else float("nan"),
        }

    return {
        "requests": len(every),
        "seconds": round(elapsed, 2),
        "requests_per_second": round(len(every) / elapsed, 1),
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "all": summary(every),
        "search": summary(latencies["search"]),
        "add": summary(latencies["add"]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (threads)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers of the server")
    parser.add_argument("--seed", type=int, default=2000, help="memories stored before the run")
    parser.add_argument("--store", help="store path or postgresql:// URL (default: temporary)")
    parser.add_argument("--embedder", default="hash", help="embedder of the store (hash)")
    parser.add_argument("--url", help="a running server instead of starting one")
    parser.add_argument("--key", help="its API key (with --url)")
    parser.add_argument("--random-seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    if bool(args.url) != bool(args.key):
        parser.error("--url and --key go together")
    server = None if args.url else Server(args)
    url, key = (args.url, args.key) if server is None else (server.url, server.key)
    try:
        report = run_load(url, key, args.clients, args.duration, args.random_seed)
    finally:
        if server is not None:
            server.stop()
    report.update(
        clients=args.clients, workers=args.workers, seeded=args.seed, embedder=args.embedder,
        store="external" if args.url else ("postgresql" if str(args.store or "").startswith(
            "postgres") else "sqlite"), cpus=os.cpu_count(),
        at=datetime.now(UTC).isoformat(timespec="seconds"),
    )  # fmt: skip
    r = report
    print(f"{r['clients']} clients, {r['workers']} worker(s), {r['store']}, "
          f"{r['seeded']} memories seeded, {r['seconds']} s, {r['cpus']} CPUs")  # fmt: skip
    print(f"{r['requests']} requests, {r['requests_per_second']} req/s, "
          f"{r['errors']} errors {r['error_kinds'] or ''}")  # fmt: skip
    print(f"{'':8}{'count':>8}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    for op in ("all", "search", "add"):
        s = r[op]
        print(f"{op:8}{s['count']:>8}{s['p50_ms']:>10}{s['p95_ms']:>10}{s['p99_ms']:>10}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
