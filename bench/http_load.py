"""HTTP load: N concurrent clients against ``memchentic serve`` on loopback.

Each client is a thread with its own keep-alive connection, running a 90/10 mix
of searches (``POST /v1/search``, limit 10) and adds (``POST /v1/memories``,
new distinct texts) for a fixed time. Reported: requests per second, p50 / p95
/ p99 latency (overall and per operation), errors (any answer other than
200, or a transport failure), and the CPU time per request of the server's
processes (the server and its workers, through ``psutil``) and of this one (the
clients; in-process, the library's work too): what bounds the requests a second
whatever else the machine runs (``cpu ms/req`` in the grid).

By default it builds a fresh store (SQLite in a temporary folder, or
``--store`` as a path or ``postgresql://`` URL) with ``--seed`` memories for one
identity, creates a key, starts ``memchentic serve --workers W`` on a free port
and stops it afterwards. ``--url`` and ``--key`` aim it at a running server
instead. The embedder defaults to ``hash`` (no model is timed).

``--matrix`` runs the grid of issue 36, item 4 instead: for each backend of
``--backends`` (SQLite, and PostgreSQL on an embedded server as the tests start
it), the same mix made in-process through the library (threads sharing one
``Memory``, the ``library`` rows), then a fresh seeded store behind ``serve``
for each worker count of ``--workers-list``, each at every client count of
``--clients-list``; then each server row's search p95 and requests/s over the
library's at the same concurrency (the server's overhead). The load average
of the machine is kept with each row.

Usage::

    python bench/http_load.py                                  # 8 clients, 30 s
    python bench/http_load.py --matrix --duration 10           # the grid (issue 36)
    python bench/http_load.py --library --clients 8            # in-process, no server
    python bench/http_load.py --clients 16 --workers 2 --duration 60
    python bench/http_load.py --store postgresql://localhost/bench --workers 4
    python bench/http_load.py --url http://127.0.0.1:8077 --key mck_...

Note that the clients share the machine with the server: on a small machine the
figures measure both. The in-process rows run numpy's BLAS on one thread and,
over SQLite, the interpreter's switch interval at 1 ms, as ``memchentic serve``
runs each worker (``server/threads.py``), so that the two differ only by the
server.
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Callable, Iterator, Sequence
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


def create_key(store: str, embedder: str, home: Path) -> str:
    """A key for the identity ``bench`` (created with it), through the CLI."""
    exe = shutil.which("memchentic", path=str(Path(sys.executable).parent)) or "memchentic"
    done = subprocess.run(
        [exe, "keys", "create", "--identity", "bench", "--name", "http-load", "--store", store,
         "--embedder", embedder, "--json"],
        capture_output=True, text=True, check=True,
        env={**os.environ, "MEMCHENTIC_HOME": str(home)},
    )  # fmt: skip
    return str(json.loads(done.stdout[done.stdout.index("{") :])["key"])


def seed_store(store: str, embedder: str, count: int, random_seed: int, home: Path) -> None:
    """``count`` memories of ``sentence`` for the identity ``bench`` (which must exist)."""
    from memchentic import Memory, Settings

    rng = random.Random(random_seed)
    with Memory(store=store, embedder=embedder, settings=Settings(home=home)) as mem:
        view = mem.for_identity("bench")
        for start in range(0, count, 500):
            batch = [sentence(rng, i) for i in range(start, min(count, start + 500))]
            view.add_many(batch, on_duplicate="keep")


class Server:
    """A store seeded for the run and ``memchentic serve`` over it."""

    def __init__(self, args: argparse.Namespace, store: str | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="memchentic-load-"))
        self.store = store or args.store or str(self.folder / "memory.db")
        home = self.folder / "home"
        self.key = create_key(self.store, args.embedder, home)
        seed_store(self.store, args.embedder, args.seed, args.random_seed, home)
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
            env={**os.environ, "MEMCHENTIC_HOME": str(home)},
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


#: A client's way to make one call: (operation, body) -> status (200 when it worked).
Call = Callable[[str, dict[str, Any]], Any]
#: Opens client ``n``'s connection (before the clock starts); yields its Call.
Opener = Callable[[int], contextlib.AbstractContextManager[Call]]


def http_opener(url: str, key: str) -> Opener:
    """Clients of the server: each its own keep-alive connection."""
    paths = {"search": "/v1/search", "add": "/v1/memories"}

    @contextlib.contextmanager
    def open_client(n: int) -> Iterator[Call]:
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            http.get("/v1/me")  # open the connection before the clock starts

            def call(op: str, body: dict[str, Any]) -> Any:
                try:
                    return http.post(paths[op], json=body).status_code
                except httpx.HTTPError as exc:
                    return type(exc).__name__

            yield call

    return open_client


def library_opener(view: Any) -> Opener:
    """Clients of the library: threads calling the same ``Memory`` view in-process
    (BLAS on one thread and, over SQLite, the interpreter's 1 ms switch interval, as
    the server's workers run it)."""
    from memchentic.server import threads

    threads.limit_blas_threads()
    if hasattr(threads, "handoffs_for"):  # (code before it, run for a comparison)
        threads.handoffs_for(view.store)

    @contextlib.contextmanager
    def open_client(n: int) -> Iterator[Call]:
        def call(op: str, body: dict[str, Any]) -> Any:
            try:
                if op == "search":
                    view.search(body["query"], limit=body["limit"])
                else:
                    view.add(body["content"], on_duplicate=body["on_duplicate"])
            except Exception as exc:  # noqa: BLE001 - counted as an error of the run
                return type(exc).__name__
            return 200

        yield call

    return open_client


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of process ``pid`` and its live children (a
    server and its workers); NaN when it cannot be read."""
    try:
        import psutil

        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except Exception:  # noqa: BLE001 - no psutil, or the process is gone
        return float("nan")
    total = 0.0
    for proc in procs:
        with contextlib.suppress(Exception):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def run_load(
    url: str | Opener,
    key: str | None,
    clients: int,
    duration: float,
    seed: int,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """Run the mix against a server (``url`` and ``key``) or through ``url`` as an
    :data:`Opener`; returns the figures, with the CPU time per request of this
    process (the clients, and the library's work in-process) and of the server
    (``server_pid`` and its workers)."""
    opener = http_opener(url, str(key)) if isinstance(url, str) else url
    latencies: dict[str, list[float]] = {"search": [], "add": []}
    errors: dict[str, int] = {}
    lock = threading.Lock()
    start_gate = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        local: dict[str, list[float]] = {"search": [], "add": []}
        failed: dict[str, int] = {}
        with opener(n) as call:
            call("search", {"query": QUESTIONS[n % len(QUESTIONS)], "limit": 10})  # warm
            start_gate.wait()
            i = 0
            while time.monotonic() < stop_at[0]:
                i += 1
                if rng.random() < 0.9:
                    op = "search"
                    body: dict[str, Any] = {"query": rng.choice(QUESTIONS), "limit": 10}
                else:
                    op = "add"
                    body = {"content": sentence(rng, 10**7 + n * 10**5 + i),
                            "on_duplicate": "keep"}  # fmt: skip
                began = time.perf_counter()
                status = call(op, body)
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
    cpu_began = time.process_time(), (tree_cpu(server_pid) if server_pid else float("nan"))
    start_gate.wait()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    cpu = (
        time.process_time() - cpu_began[0],
        (tree_cpu(server_pid) - cpu_began[1] if server_pid else float("nan")),
    )
    every = latencies["search"] + latencies["add"]

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "count": len(values),
            "per_second": round(len(values) / elapsed, 1),
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
        # CPU ms per request: this process (clients; in-process, the library's work
        # too) and the server's processes (NaN in-process)
        "cpu_ms_per_request": {
            "here": round(cpu[0] * 1000 / max(len(every), 1), 2),
            "server": round(cpu[1] * 1000 / max(len(every), 1), 2),
        },
    }


# --- the grid (--matrix): clients x workers x backends, and the library beside it ------
def _loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def run_matrix(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every backend of ``args.backends``: the library in-process, then a server per
    worker count, each at every client count of ``args.clients_list``."""
    from memchentic import Memory, Settings

    rows: list[dict[str, Any]] = []
    folder = Path(tempfile.mkdtemp(prefix="memchentic-grid-"))
    postgres = None
    try:
        for backend in args.backends:
            n = len(rows)

            def location(label: str, n: int = n, backend: str = backend) -> str:
                nonlocal postgres
                if backend == "sqlite":
                    return str(folder / f"{label}-{n}.db")
                if postgres is None:
                    from memchentic.store.postgres_embedded import EmbeddedPostgres

                    (folder / "postgres").mkdir()
                    postgres = EmbeddedPostgres(folder / "postgres")
                return str(postgres.url(schema=f"load_{label}_{n}"))

            def record(report: dict[str, Any], mode: str, workers: int | None,
                       clients: int, backend: str = backend) -> None:  # fmt: skip
                report.update(backend=backend, mode=mode, workers=workers, clients=clients,
                              load=_loadavg())  # fmt: skip
                rows.append(report)
                print(_row_line(report), file=sys.stderr, flush=True)
                if args.json:  # so far, should a later row fail
                    args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n")

            store = location("library")
            home = folder / f"home-library-{backend}"
            create_key(store, args.embedder, home)  # creates the identity, as for the server
            seed_store(store, args.embedder, args.seed, args.random_seed, home)
            with Memory(store=store, embedder=args.embedder, settings=Settings(home=home)) as mem:
                opener = library_opener(mem.for_identity("bench"))
                for clients in args.clients_list:
                    got = run_load(opener, None, clients, args.duration, args.random_seed)
                    record(got, "library", None, clients)
            for workers in args.workers_list:
                server_args = argparse.Namespace(**{**vars(args), "workers": workers})
                server = Server(server_args, store=location(f"w{workers}"))
                try:
                    for clients in args.clients_list:
                        got = run_load(server.url, server.key, clients, args.duration,
                                       args.random_seed, server.proc.pid)  # fmt: skip
                        record(got, "server", workers, clients)
                finally:
                    server.stop()
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def _row_line(r: dict[str, Any]) -> str:
    who = "library" if r["mode"] == "library" else f"server {r['workers']}w"
    cpu = r.get("cpu_ms_per_request", {})
    used = cpu.get("here") if r["mode"] == "library" else cpu.get("server")
    return (f"{r['backend']:<11}{who:<11}{r['clients']:>7}{r['requests_per_second']:>9}"
            f"{r['search']['p50_ms']:>10}{r['search']['p95_ms']:>10}"
            f"{r['add']['p50_ms']:>10}{r['add']['p95_ms']:>10}{r['errors']:>7}"
            f"{used if used is not None else float('nan'):>9}")  # fmt: skip


def print_matrix(rows: list[dict[str, Any]]) -> None:
    """The grid, then each server row's search p95 over the library's at its concurrency."""
    print(f"{'backend':<11}{'mode':<11}{'clients':>7}{'req/s':>9}{'search':>10}{'p95':>10}"
          f"{'add p50':>10}{'p95':>10}{'errors':>7}{'cpu ms':>9}")  # fmt: skip
    print(f"{'':<29}{'':>9}{'p50 ms':>10}{'ms':>10}{'ms':>10}{'ms':>10}{'':>7}{'/req':>9}")
    for r in rows:
        print(_row_line(r))
    lib = {(r["backend"], r["clients"]): r for r in rows if r["mode"] == "library"}
    print("\nserver over library at the same concurrency (search p95, req/s):")
    for r in rows:
        base = lib.get((r["backend"], r["clients"]))
        if r["mode"] == "server" and base:
            p95 = r["search"]["p95_ms"] / base["search"]["p95_ms"]
            rate = r["requests_per_second"] / base["requests_per_second"]
            print(f"{r['backend']:<11}server {r['workers']}w {r['clients']:>4} clients: "
                  f"p95 x{p95:.2f}, req/s x{rate:.2f}")  # fmt: skip


def _ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",")]


def run_library(args: argparse.Namespace) -> dict[str, Any]:
    """The mix in-process, on a fresh seeded store (``--store`` or a temporary one)."""
    from memchentic import Memory, Settings

    folder = Path(tempfile.mkdtemp(prefix="memchentic-load-"))
    try:
        store = args.store or str(folder / "memory.db")
        create_key(store, args.embedder, folder / "home")
        seed_store(store, args.embedder, args.seed, args.random_seed, folder / "home")
        with Memory(store=store, embedder=args.embedder,
                    settings=Settings(home=folder / "home")) as mem:  # fmt: skip
            opener = library_opener(mem.for_identity("bench"))
            return run_load(opener, None, args.clients, args.duration, args.random_seed)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
    parser.add_argument("--library", action="store_true",
                        help="the same calls in-process (no server)")  # fmt: skip
    parser.add_argument("--matrix", action="store_true", help="the grid (see above)")
    parser.add_argument("--clients-list", type=_ints, default=[1, 8, 32],
                        help="with --matrix: client counts (1,8,32)")  # fmt: skip
    parser.add_argument("--workers-list", type=_ints, default=[1, 2],
                        help="with --matrix: worker counts (1,2)")  # fmt: skip
    parser.add_argument("--backends", type=lambda v: v.split(","), default=["sqlite", "postgres"],
                        help="with --matrix: sqlite,postgres")  # fmt: skip
    args = parser.parse_args(argv)
    if bool(args.url) != bool(args.key):
        parser.error("--url and --key go together")
    if args.matrix:
        rows = run_matrix(args)
        print(f"{os.cpu_count()} CPUs, {args.seed} memories seeded, {args.duration} s a row, "
              f"{args.embedder} embedder, load average at the end {_loadavg()}")  # fmt: skip
        print_matrix(rows)
        if args.json:
            args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
        return 0 if all(r["errors"] == 0 for r in rows) else 1
    if args.library:
        report = run_library(args)
    else:
        server = None if args.url else Server(args)
        url, key = (args.url, args.key) if server is None else (server.url, server.key)
        try:
            report = run_load(url, key, args.clients, args.duration, args.random_seed,
                              server.proc.pid if server is not None else None)  # fmt: skip
        finally:
            if server is not None:
                server.stop()
    report.update(
        clients=args.clients, workers=args.workers, seeded=args.seed, embedder=args.embedder,
        mode="library" if args.library else "server", load=_loadavg(),
        store="external" if args.url else ("postgresql" if str(args.store or "").startswith(
            "postgres") else "sqlite"), cpus=os.cpu_count(),
        at=datetime.now(UTC).isoformat(timespec="seconds"),
    )  # fmt: skip
    r = report
    print(f"{r['clients']} clients, {r['workers']} worker(s), {r['store']}, "
          f"{r['seeded']} memories seeded, {r['seconds']} s, {r['cpus']} CPUs")  # fmt: skip
    print(f"{r['requests']} requests, {r['requests_per_second']} req/s, "
          f"{r['errors']} errors {r['error_kinds'] or ''}")  # fmt: skip
    cpu = r["cpu_ms_per_request"]
    here = "the clients and the library" if args.library else "the clients"
    print(f"CPU per request: {cpu['here']} ms here ({here}), {cpu['server']} ms the server")
    print(f"{'':8}{'count':>8}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    for op in ("all", "search", "add"):
        s = r[op]
        print(f"{op:8}{s['count']:>8}{s['p50_ms']:>10}{s['p95_ms']:>10}{s['p99_ms']:>10}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
