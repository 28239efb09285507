"""Instructions per search on an agent's own store (issue 36, item 2), counted by
valgrind's callgrind: the load-independent twin of ``conversation_speed.py``.

One LongMemEval dev haystack (``--haystack``, default the first: 466 turns, about
50 sessions) is logged the README's way (one ``add`` per turn, with its session;
``bench.harness.ingest``) into a SQLite store, outside valgrind. Then two child
processes run under callgrind, each on a fresh copy of the store, with a lookup
embedder (the question vectors from ``bench/results/embeddings.sqlite``, MiniLM):
both open the store and ask the warm-up questions, then one asks the 8 measured
questions and the other only looks their vectors up. The figure is the difference
over 8: the engine's instructions per search, the interpreter's start-up, the
imports, opening the store and the embedder cancelled out (as ``instructions.py``
does). Two figures:

* ``fresh``: the warm-up questions are 8 others (questions 9 to 16): the measured
  ones are each asked for the first time (what an agent's next question costs);
* ``repeat``: the warm-up questions are the measured ones: each is asked a second
  time (what ``conversation_speed.py``'s repeats time).

``now`` is the haystack's question date for every search; recalls are counted
(the first ask of a question writes them), as in a real search.

Usage::

    python bench/conversation_instructions.py                 # both figures
    python bench/conversation_instructions.py --mode fresh --haystack 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "dev.json.gz"
#: Questions measured (and, for ``fresh``, warm-up questions before them).
N = 8
MODES = ("fresh", "repeat")


def prepare(data: Path, haystack: int, folder: Path) -> Path:
    """The haystack's store and the question vectors (``table.npz``) in ``folder``."""
    from bench.harness import cache, ingest, longmemeval
    from memchentic import Memory, get_embedder
    from memchentic.settings import load_settings
    from memchentic.write.statements import embedding_text

    loaded, _ = longmemeval.load(data, max_questions=max(2 * N, haystack + 1))
    settings = load_settings()
    settings = settings.model_copy(update={
        "max_content_bytes": max(settings.max_content_bytes, longmemeval.CONTENT_BYTES),
        "home": folder / "home",
    })  # fmt: skip
    emb = cache.DiskCachedEmbedder(get_embedder("local", settings), cache.DEFAULT_PATH)
    questions = [q.question for q in loaded[: 2 * N]]
    texts = [embedding_text(q) for q in questions]
    q = loaded[haystack]
    ingest.warm(emb, q.entries)
    store = folder / "store.db"
    with Memory(str(store), embedder=emb, settings=settings) as mem:
        ingest.ingest(mem, q.entries, user_id="u", mode="add")
    np.savez(folder / "table.npz", texts=np.array(texts), vectors=emb.embed_batch(texts),
             questions=np.array(questions), now=np.array(q.date.isoformat()))  # fmt: skip
    return store


def child(store: str, mode: str, measured: int) -> None:
    """Under callgrind: open the store, ask the warm-up questions, then ``measured``
    questions (or only look their vectors up)."""
    from datetime import datetime

    from memchentic import Embedder, Memory, Settings
    from memchentic.write.statements import embedding_text

    data = np.load(Path(store).parent / "table.npz")
    table = {str(t): v for t, v in zip(data["texts"], data["vectors"], strict=True)}
    questions = [str(q) for q in data["questions"]]
    now = datetime.fromisoformat(str(data["now"]))

    class Lookup(Embedder):
        name, model, dimension = "local", "sentence-transformers/all-MiniLM-L6-v2", 384

        def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
            return np.stack([table[t] for t in texts])

    asked = questions[:N]
    warm = questions[N : 2 * N] if mode == "fresh" else asked
    # under callgrind a statement runs ~50x longer: no budget stops it
    settings = Settings(home=Path(store).parent, statement_timeout_seconds=24 * 3600)
    with Memory(store, embedder=Lookup(), settings=settings) as mem:
        for question in warm:
            mem.search(question, user_id="u", limit=10, now=now)
        for question in asked:
            if measured:
                mem.search(question, user_id="u", limit=10, now=now)
            else:
                Lookup().embed(embedding_text(question))


def measure(store: Path, mode: str, valgrind: str) -> int:
    """Instructions per search in ``mode``: (N-run minus 0-run) / N."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # fmt: skip
    started: list[tuple[subprocess.Popen[str], Path]] = []
    with tempfile.TemporaryDirectory(prefix="memchentic-cg-") as folder:
        for measured in (1, 0):
            where = Path(folder) / str(measured)
            where.mkdir()
            shutil.copy(store, where / "store.db")
            shutil.copy(store.parent / "table.npz", where / "table.npz")
            out = where / "callgrind.out"
            cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no",
                   "--dump-instr=no", "--compress-strings=no", sys.executable,
                   str(Path(__file__).resolve()), "--child", str(where / "store.db"), mode,
                   str(measured)]  # fmt: skip
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)  # fmt: skip
            started.append((proc, out))
        totals = []
        for proc, out in started:
            _, stderr = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"the child failed ({proc.returncode}):\n{stderr[-3000:]}")
            line = next(x for x in out.read_text().splitlines()
                        if x.startswith(("totals:", "summary:")))  # fmt: skip
            totals.append(int(line.split()[1]))
    return (totals[0] - totals[1]) // N


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        child(args[1], args[2], int(args[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="default: %(default)s")
    parser.add_argument("--haystack", type=int, default=0, help="which haystack (0: the first)")
    parser.add_argument("--mode", choices=MODES, action="append", help="default: both")
    parser.add_argument("--valgrind", default="valgrind")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    a = parser.parse_args(args)
    report: dict[str, Any] = {"haystack": a.haystack}
    with tempfile.TemporaryDirectory(prefix="memchentic-conversation-cg-") as folder:
        store = prepare(a.data, a.haystack, Path(folder))
        for mode in a.mode or MODES:
            report[mode] = measure(store, mode, a.valgrind)
            print(f"{mode:7s} {report[mode]:>14,} instructions a search", flush=True)
    if a.json:
        a.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
