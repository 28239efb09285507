"""Instructions one isolated search executes (a key's identity searching its store),
counted by valgrind's callgrind (issue 36, item 4).

``bench/instructions.py`` counts the trusted principal's searches; an identity's
take the isolated path (``store/sqlite_isolated.py``), which the HTTP grid
(``http_load.py --matrix``) runs. This builds the grid's store (2,000 memories of
``http_load.sentence`` for the identity ``bench``, hash embedder, SQLite), then
runs two children under callgrind, each on a fresh copy: both make 16 warm-up
searches (the 8 questions of ``http_load.py`` twice), then one makes N more and
the other none. The figure is (N-run minus 0-run) / N, so start-up, imports and
the warm-up cancel out. ``PYTHONHASHSEED=0`` and one BLAS thread keep the runs
alike.

Usage::

    python bench/isolated_instructions.py            # N = 16
    python bench/isolated_instructions.py --searches 32
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(store: str, count: int) -> None:
    """Warm up, then ``count`` searches as the identity ``bench``."""
    sys.path.insert(0, str(HERE))
    import http_load

    from memchentic import Memory, Settings

    settings = Settings(home=Path(store).parent / "home", statement_timeout_seconds=24 * 3600)
    with Memory(store=store, embedder="hash", settings=settings) as mem:
        view = mem.for_identity("bench")
        for _ in range(2):
            for question in http_load.QUESTIONS:
                view.search(question, limit=10)
        for i in range(count):
            view.search(http_load.QUESTIONS[i % len(http_load.QUESTIONS)], limit=10)


def _run(store: Path, count: int, valgrind: str) -> subprocess.Popen[str]:
    out = store.parent / "callgrind.out"
    env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # fmt: skip
    cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no",
           "--dump-instr=no", sys.executable, str(Path(__file__).resolve()), "--child",
           str(store), str(count)]  # fmt: skip
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _total(proc: subprocess.Popen[str], out: Path) -> int:
    _, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the child failed ({proc.returncode}):\n{stderr[-3000:]}")
    for line in out.read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=16, help="measured searches (N)")
    parser.add_argument("--seed", type=int, default=2000, help="memories of the identity")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        parser.error("valgrind is not installed")
    sys.path.insert(0, str(HERE))
    import http_load

    folder = Path(tempfile.mkdtemp(prefix="memchentic-isolated-"))
    try:
        base = folder / "base" / "memory.db"
        base.parent.mkdir()
        http_load.create_key(str(base), "hash", base.parent / "home")
        http_load.seed_store(str(base), "hash", args.seed, 7, base.parent / "home")
        runs = {}
        for name, count in (("n", args.searches), ("zero", 0)):
            shutil.copytree(base.parent, folder / name)
            store = folder / name / "memory.db"
            runs[name] = (_run(store, count, valgrind), store.parent / "callgrind.out")
        with_calls, without = (_total(*runs["n"]), _total(*runs["zero"]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    per = (with_calls - without) / args.searches
    print(f"one isolated search ({args.seed} memories): {per:,.0f} instructions "
          f"(N={args.searches}: {with_calls:,}; 0: {without:,})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
