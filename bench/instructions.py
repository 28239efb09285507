"""Instructions the engine executes for one search, one ``add`` and one ``add_many``,
counted by valgrind's callgrind (issue 36, item 5).

A count of instructions does not move with the load of a shared machine, so a
regression of 20% in the engine's own work shows as a number. What is counted:

* ``search@10k`` and ``search@100k``: one ``Memory.search(q, limit=10)`` on a
  SQLite store of 10,000 / 100,000 memories (the synthetic corpus of
  ``bench/search_scale.py``: Zipf-distributed words, clustered 384-d vectors);
* ``add``: one ``Memory.add(text)`` (default write policy) on the 10k store;
* ``add_many``: one ``Memory.add_many`` of 1,000 new texts on the 10k store;
* ``add_many_keep``: the same with ``on_duplicate="keep"``, as an agent logs turns
  (nothing resolved against the store).

Vectors are given: the embedder is a lookup table of precomputed vectors, and
even that lookup is left out of the count (below). Each store is built once,
outside valgrind, and kept under ``bench/results/instructions/`` (git-ignored).
Each measurement then runs a small child process under callgrind twice, each on
a fresh copy of the store: both open the store and make one warm-up call (lazy
loads, caches), then one run makes N measured calls and the other none, but asks
the embedder for the same vectors as the N calls did (recorded in a native run
first). The figure is (N-run minus 0-run) / N, so interpreter start-up, imports,
opening the store and the embedder cancel out. ``PYTHONHASHSEED=0`` and one
BLAS thread keep the runs alike.

The figures are printed beside the last recorded ones (``bench/instructions.json``,
quoted in bench/README.md) with their ratio; ``--record`` writes the new ones there.

Usage::

    python bench/instructions.py                  # every figure, twice (--repeat 2)
    python bench/instructions.py --only search@10k --repeat 1
    python bench/instructions.py --record         # and keep them as the reference
    python bench/instructions.py --quick          # tiny stores (a smoke test)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "instructions"
RECORDED = HERE / "instructions.json"
SEED = 42
DIM = 384


@dataclass(frozen=True)
class Spec:
    """One figure: ``count`` calls of ``op`` on a store of ``size`` memories."""

    name: str
    op: str  # search | add | add_many
    size: int
    count: int  # measured calls (N)
    batch: int = 1  # texts per add_many
    keep: bool = False  # on_duplicate="keep": the agent's log of turns (no resolution)


FULL = (
    Spec("search@10k", "search", 10_000, 5),
    Spec("search@100k", "search", 100_000, 5),
    Spec("add", "add", 10_000, 5),
    Spec("add_many", "add_many", 10_000, 1, batch=1000),
    Spec("add_many_keep", "add_many", 10_000, 1, batch=1000, keep=True),
)
QUICK = (
    Spec("search@300", "search", 300, 2),
    Spec("add", "add", 300, 2),
    Spec("add_many", "add_many", 300, 1, batch=20),
)
#: Texts beyond the store's: the adds' and add_many's, and their warm-up calls.
SPARE = 1200


# --- the embedder ---------------------------------------------------------------------
def lookup_embedder(table: dict[str, np.ndarray]) -> Any:
    """An embedder that returns the given vectors (the identity of search_scale's,
    so its stores open with it). ``calls`` records the texts of each call while
    ``recording`` is true."""
    from memchentic.embed.base import Embedder

    class Lookup(Embedder):
        name = "precomputed"
        model = "bench-precomputed"
        dimension = DIM

        def __init__(self) -> None:
            self.recording = False
            self.calls: list[list[str]] = []

        def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
            if self.recording:
                self.calls.append(list(texts))
            return np.stack([table[t] for t in texts]) if texts else np.empty((0, DIM))

    return Lookup()


def _table_file(folder: Path, texts: Sequence[str], vectors: np.ndarray) -> Path:
    path = folder / "table.npz"
    np.savez(path, texts=np.asarray(texts, dtype=object), vectors=vectors.astype(np.float32))
    return path


def _load_table(path: Path) -> dict[str, np.ndarray]:
    data = np.load(path, allow_pickle=True)
    return {str(t): v for t, v in zip(data["texts"], data["vectors"], strict=True)}


# --- the stores (built outside valgrind, kept) -----------------------------------------
def build(
    size: int, seed: int, rebuild: bool = False, root: Path = RESULTS
) -> tuple[Path, dict[str, Any]]:
    """The store of ``size`` memories (built if missing, or again with ``rebuild``) and
    the inputs of its calls: ``queries`` (search texts), ``texts`` (new texts to add),
    all with vectors in ``table.npz`` next to the store."""
    sys.path.insert(0, str(HERE.parent))
    from bench.search_scale import Corpus, make_queries
    from memchentic import Memory, Settings

    path = root / f"store-{size}-s{seed}" / "memory.db"
    inputs_file = path.parent / "inputs.json"
    if inputs_file.exists() and not rebuild:
        return path, json.loads(inputs_file.read_text())
    if path.parent.exists():  # a build that did not finish
        shutil.rmtree(path.parent)
    path.parent.mkdir(parents=True)
    corpus = Corpus(size + SPARE, seed)
    queries = make_queries(corpus, 16, seed)
    texts = corpus.texts[size:]
    table = dict(zip(corpus.texts, corpus.vectors, strict=True))
    table.update({text: vec for _, text, vec in queries})
    began = time.perf_counter()
    embedder = lookup_embedder(table)
    with Memory(str(path), embedder=embedder, settings=Settings(home=path.parent)) as mem:
        for start in range(0, size, 1000):
            batch = [{"content": t} for t in corpus.texts[start : min(size, start + 1000)]]
            mem.add_many(batch, on_duplicate="keep")
            print(f"  built {min(size, start + 1000)}/{size}", file=sys.stderr, end="\r")
        # one search builds the vector index, which closing saves beside the store
        # (``memory.db.vectors``): the measured runs load it instead of training it
        mem.search(queries[0][1], limit=10)
    print(f"  built {size} memories in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    needed = [q for _, q, _ in queries] + texts
    _table_file(path.parent, needed, np.stack([table[t] for t in needed]))
    inputs = {"queries": [q for _, q, _ in queries], "texts": texts}
    inputs_file.write_text(json.dumps(inputs))
    return path, inputs


def _copy(store: Path, folder: Path) -> Path:
    """A fresh copy of the store (every file beside it but the inputs) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in store.parent.iterdir():
        if f.is_file() and f.name not in ("inputs.json",):
            shutil.copy2(f, folder / f.name)
    return folder / store.name


# --- the child: what runs under callgrind ----------------------------------------------
def child(job: dict[str, Any]) -> None:
    """Open the store, make the warm-up call, then ``count`` measured calls; with
    ``count`` 0, replay the embedder calls of ``replay`` instead."""
    from memchentic import Memory, Settings

    store = Path(job["store"])
    embedder = lookup_embedder(_load_table(store.parent / "table.npz"))
    op, count, calls = job["op"], job["count"], job["calls"]
    options = {"on_duplicate": "keep"} if job.get("keep") else {}
    # under callgrind a statement runs ~50x longer: no budget stops it
    settings = Settings(home=store.parent, statement_timeout_seconds=24 * 3600)
    with Memory(str(store), embedder=embedder, settings=settings) as mem:
        results: list[Any] = []
        if op == "search":
            mem.search(calls[0], limit=10)
            embedder.recording = True
            for q in calls[1 : 1 + count]:
                results += mem.search(q, limit=10)
        elif op == "add":
            mem.add(calls[0], **options)
            embedder.recording = True
            for text in calls[1 : 1 + count]:
                results.append(mem.add(text, **options))
        else:
            warm, rest = calls[0], calls[1:]
            mem.add_many(warm, **options)
            embedder.recording = True
            for batch in rest[:count]:
                results += mem.add_many(batch, **options)
        embedder.recording = False
        for texts in job.get("replay") or []:
            embedder.embed_batch(texts)
    if job.get("record"):
        statuses = sorted({getattr(r, "status", "hit") for r in results})
        Path(job["record"]).write_text(json.dumps({"calls": embedder.calls, "statuses": statuses}))


def _calls(spec: Spec, inputs: dict[str, Any]) -> list[Any]:
    """The warm-up call's input, then the measured calls' inputs."""
    if spec.op == "search":
        return inputs["queries"][: spec.count + 1]
    texts = inputs["texts"]
    if spec.op == "add":
        return texts[: spec.count + 1]
    warm = 10
    return [texts[:warm]] + [
        texts[warm + i * spec.batch : warm + (i + 1) * spec.batch] for i in range(spec.count)
    ]


def _env() -> dict[str, str]:
    return {
        **os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
    }  # fmt: skip


def _start_child(
    job: dict[str, Any], folder: Path, valgrind: str | None
) -> tuple[subprocess.Popen[str], Path | None]:
    """Start the child (under callgrind unless ``valgrind`` is None)."""
    job_file = folder / "job.json"
    job_file.write_text(json.dumps(job))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(job_file)]
    out = None
    if valgrind is not None:
        out = folder / "callgrind.out"
        cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no",
               "--dump-instr=no", "--compress-strings=no", *cmd]  # fmt: skip
    proc = subprocess.Popen(
        cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, out


def _instructions(started: tuple[subprocess.Popen[str], Path | None]) -> int:
    """Wait for a child; the instructions it executed (0 when not under callgrind)."""
    proc, out = started
    _, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the child failed ({proc.returncode}):\n{stderr[-3000:]}")
    if out is None:
        return 0
    for line in out.read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def measure(spec: Spec, seed: int, valgrind: str, work: Path, root: Path) -> dict[str, Any]:
    """One figure: instructions per measured call, and the two runs' totals."""
    store, inputs = build(spec.size, seed, root=root)
    calls = _calls(spec, inputs)
    base = {"op": spec.op, "count": spec.count, "calls": calls, "keep": spec.keep}
    record = work / "record.json"
    native = {**base, "store": str(_copy(store, work / "native")), "record": str(record)}
    _instructions(_start_child(native, work / "native", None))
    recorded = json.loads(record.read_text())
    if spec.op != "search" and recorded["statuses"] != ["added"]:
        raise RuntimeError(f"{spec.name}: writes not all added: {recorded['statuses']}")
    n_job = {**base, "store": str(_copy(store, work / "n"))}
    zero = {**base, "count": 0, "replay": recorded["calls"], "store": str(_copy(store, work / "0"))}
    began = time.perf_counter()
    # the two runs at once (a count does not depend on what else runs)
    n_run, zero_run = (
        _start_child(n_job, work / "n", valgrind),
        _start_child(zero, work / "0", valgrind),
    )
    with_calls, without = _instructions(n_run), _instructions(zero_run)
    per_call = (with_calls - without) / spec.count
    return {
        "name": spec.name, "instructions": round(per_call), "n_run": with_calls,
        "zero_run": without, "calls": spec.count, "per": spec.batch,
        "seconds": round(time.perf_counter() - began, 1),
    }  # fmt: skip


# --- report ----------------------------------------------------------------------------
def _recorded(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    return {k: int(v["instructions"]) for k, v in json.loads(path.read_text())["figures"].items()}


def print_table(rows: list[dict[str, Any]], recorded: dict[str, int]) -> None:
    print(f"{'call':<14}{'run':>4}{'instructions':>16}{'recorded':>16}{'ratio':>8}{'per item':>12}")
    for r in rows:
        ref = recorded.get(r["name"])
        ratio = f"{r['instructions'] / ref:.3f}" if ref else "-"
        per_item = f"{r['instructions'] / r['per']:,.0f}" if r["per"] > 1 else ""
        print(f"{r['name']:<14}{r['run']:>4}{r['instructions']:>16,}"
              f"{(f'{ref:,}' if ref else '-'):>16}{ratio:>8}{per_item:>12}")  # fmt: skip


def run(
    specs: Sequence[Spec],
    *,
    seed: int,
    repeat: int,
    valgrind: str,
    rebuild: bool = False,
    root: Path = RESULTS,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if rebuild:
        for size in sorted({s.size for s in specs}):
            build(size, seed, rebuild=True, root=root)
    for spec in specs:
        for n in range(repeat):
            with tempfile.TemporaryDirectory(prefix="memchentic-instr-") as tmp:
                row = measure(spec, seed, valgrind, Path(tmp), root)
            row["run"] = n + 1
            rows.append(row)
            print(f"  {spec.name} run {n + 1}: {row['instructions']:,} "
                  f"({row['seconds']} s under callgrind)", file=sys.stderr)  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="tiny stores: a smoke test")
    parser.add_argument("--only", action="append", help="just this figure (repeatable)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each figure (2)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--rebuild", action="store_true",
                        help="build the kept stores again (after a schema change)")  # fmt: skip
    parser.add_argument("--valgrind", default=shutil.which("valgrind") or "valgrind")
    parser.add_argument("--recorded", type=Path, default=RECORDED,
                        help="the reference figures (default: %(default)s)")  # fmt: skip
    parser.add_argument("--record", action="store_true", help="write these figures there")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="where the stores are kept (default: %(default)s)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    if args.child is not None:
        child(json.loads(args.child.read_text()))
        return 0
    specs = [s for s in (QUICK if args.quick else FULL) if not args.only or s.name in args.only]
    if not specs:
        parser.error(
            f"--only: none of {', '.join(s.name for s in (QUICK if args.quick else FULL))}"
        )
    rows = run(specs, seed=args.seed, repeat=args.repeat, valgrind=args.valgrind,
               rebuild=args.rebuild, root=args.results)  # fmt: skip
    recorded = _recorded(args.recorded)
    print("instructions per call (callgrind; N-run minus 0-run, over N), SQLite, vectors given")
    print_table(rows, recorded)
    report = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"), "seed": args.seed,
        "python": sys.version.split()[0], "specs": [asdict(s) for s in specs], "runs": rows,
    }  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.record:  # the figures of this run replace those of the same names
        old = json.loads(args.recorded.read_text())["figures"] if args.recorded.exists() else {}
        figures = {**old, **{r["name"]: r for r in rows if r["run"] == 1}}
        args.recorded.write_text(json.dumps({**report, "figures": figures}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
