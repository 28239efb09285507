"""Embedder speed on this machine: ingest throughput and query latency, side by side (issue 25).

    HF_HUB_OFFLINE=1 python bench/embedders.py [--embedders local static onnx-fp32 onnx-int8]
        [--turns 2000] [--seconds 8] [--rounds 3] [--queries 300] [--load N] [--json out.json]

An embedder is a name, optionally ``@threads``: ``local`` / ``local-int8``
(:class:`memchentic.embed.LocalEmbedder` on ONNX Runtime; intra-op threads
default ``default_threads()``, the physical cores up to 4), ``torch`` (the same
model through sentence-transformers; torch's threads, default one per core), ``static``
(:class:`memchentic.embed.StaticEmbedder`), ``onnx-fp32`` / ``onnx-int8``
(``bench/harness/onnx_minilm.py``; ONNX Runtime, 1 intra-op thread unless
``@N``). One that cannot be built is skipped with a printed line.

Measured for each, in one run:

- long texts/s: ``embed_batch`` of LongMemEval haystack turns (``"role: content"``,
  whole sessions drawn at random with a fixed seed, in session order), one call;
- short texts/s: the same turns of at least 200 characters cut to about 200
  (at a space);
- add_many memories/s: the long turns logged through ``Memory.add_many`` (one
  call per session, as ``bench/harness/ingest.py`` does) into a fresh SQLite store;
- query p50 / p95 (ms): ``embed`` of ``--queries`` single questions (LongMemEval
  and LoCoMo), embedders interleaved question by question (the order rotating),
  after 10 warm-up ones; then the same under a competing load of ``--load`` busy
  processes (``bench/embed_threads.py``'s load generator; default one per core).

Each embedder gets the first n turns, n = what it embeds in about ``--seconds``
(from a probe of 32 texts), at most ``--turns``; the throughputs are medians
over ``--rounds`` rounds, the embedders taking turns within each round so noise
from other jobs on the machine falls on all of them. "x local" is the ratio of
long texts/s to ``local``'s in the same run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.embed_threads import _burn  # noqa: E402
from bench.harness import locomo  # noqa: E402
from bench.harness import longmemeval as lme  # noqa: E402
from bench.harness.ingest import Entry, ingest  # noqa: E402
from memchentic import Embedder, Memory  # noqa: E402
from memchentic.settings import load_settings  # noqa: E402
from memchentic.write.statements import embedding_text  # noqa: E402

DEFAULT_EMBEDDERS = ["local", "static", "onnx-fp32", "onnx-int8", "onnx-fp32@2", "onnx-int8@2"]
SHORT_CHARS = 200
PROBE = 32
USER = "bench"


# --- embedders ----------------------------------------------------------------------
class _TorchThreads(Embedder):
    """``inner`` with torch's (process-wide) threads set to ``threads`` for each call,
    so local embedders with different thread counts can take turns."""

    def __init__(self, inner: Embedder, threads: int) -> None:
        self.inner, self.threads = inner, threads
        self.name, self.model, self.dimension = inner.name, inner.model, inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        from memchentic.embed.local import set_threads

        set_threads(self.threads)
        return self.inner.embed_batch(texts)


def build(spec: str) -> Embedder:
    """The embedder a spec (``name[@threads]``) names; raises if it cannot be built."""
    name, _, threads_text = spec.partition("@")
    threads = int(threads_text) if threads_text else None
    if name in ("local", "local-int8"):  # ONNX Runtime (the default runtime)
        from memchentic.embed import LocalEmbedder

        return LocalEmbedder(threads=threads, int8=name == "local-int8")
    if name == "torch":  # the local model on torch, as before issue 46
        import torch

        from memchentic.embed import LocalEmbedder

        inner = LocalEmbedder(runtime="torch")
        return _TorchThreads(inner, threads or torch.get_num_threads())
    if name == "static":
        from memchentic.embed import StaticEmbedder

        if threads:
            raise ValueError("static takes no thread count")
        return StaticEmbedder()
    if name in ("onnx-fp32", "onnx-int8"):
        from bench.harness.onnx_minilm import OnnxMiniLM

        return OnnxMiniLM(name.removeprefix("onnx-"), threads=threads or 1)
    raise ValueError(f"unknown embedder {name!r}")


# --- data ---------------------------------------------------------------------------
def long_entries(path: str | Path, seed: int = 25) -> list[Entry]:
    """Every distinct haystack turn of the LongMemEval file, whole sessions in an
    order drawn with ``seed`` (so any prefix is a sample of sessions)."""
    sessions: dict[str, list[Entry]] = {}
    for item in lme.read(path):
        q = lme.question_of(item)
        for e in q.entries:
            turns = sessions.setdefault(e.session_id, [])
            if len(turns) == e.metadata["turn"]:  # each session once (haystacks share them)
                turns.append(e)
    order = sorted(sessions)
    random.Random(seed).shuffle(order)
    return [e for sid in order for e in sessions[sid]]


def shorten(text: str, chars: int = SHORT_CHARS) -> str:
    cut = text[:chars]
    space = cut.rfind(" ")
    return cut[:space] if space > chars // 2 else cut


def questions(lme_path: str | Path, locomo_dir: str | Path, n: int) -> list[str]:
    """``n`` questions: all of LongMemEval's, then LoCoMo's spread evenly."""
    out = [str(it["question"]) for it in lme.read(lme_path)]
    pool = [q.question for c in locomo.load(locomo_dir) for q in c.questions]
    rest = max(0, n - len(out))
    if rest:
        step = max(1, len(pool) // rest)
        out += pool[::step][:rest]
    return out[:n]


# --- measuring ----------------------------------------------------------------------
def clear_caches() -> None:
    """Clear memchentic's in-process memo caches (functools.lru_cache), so an
    embedder measured after another does not find the write path's work done."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("memchentic") or module is None:
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and hasattr(value, "cache_info"):
                clear()


@dataclass
class Subject:
    spec: str
    emb: Embedder
    n_long: int = 0
    n_short: int = 0
    long: list[float] = field(default_factory=list)
    short: list[float] = field(default_factory=list)
    add_many: list[float] = field(default_factory=list)
    query: list[float] = field(default_factory=list)
    query_load: list[float] = field(default_factory=list)


def _rate(emb: Embedder, texts: Sequence[str]) -> float:
    start = time.perf_counter()
    emb.embed_batch(list(texts))
    return len(texts) / (time.perf_counter() - start)


def _size(emb: Embedder, texts: Sequence[str], seconds: float, most: int) -> int:
    """How many of ``texts`` ``emb`` embeds in about ``seconds`` (at least 32)."""
    emb.embed_batch(list(texts[:4]))  # warm-up
    rate = _rate(emb, texts[:PROBE])
    return max(PROBE, min(most, len(texts), int(rate * seconds)))


def _add_many_rate(emb: Embedder, entries: Sequence[Entry], folder: Path, settings: Any) -> float:
    clear_caches()
    with (
        tempfile.TemporaryDirectory(dir=folder) as tmp,
        Memory(path=Path(tmp) / "s.db", embedder=emb, settings=settings) as mem,
    ):
        start = time.perf_counter()
        ingest(mem, entries, user_id=USER, mode="add_many")
        took = time.perf_counter() - start
    return len(entries) / took


def _query_times(subjects: Sequence[Subject], qs: Sequence[str], attr: str) -> None:
    for s in subjects:
        for q in qs[:10]:
            s.emb.embed(embedding_text(q))
    for i, q in enumerate(qs):
        text = embedding_text(q)
        shift = i % len(subjects)
        for s in [*subjects[shift:], *subjects[:shift]]:
            start = time.perf_counter()
            s.emb.embed(text)
            getattr(s, attr).append(1000 * (time.perf_counter() - start))


def _pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p * (len(ordered) - 1))] if ordered else float("nan")


def _with_load(n: int, fn: Callable[[], None]) -> None:
    stop = mp.Event()
    burners = [mp.Process(target=_burn, args=(stop,), daemon=True) for _ in range(n)]
    for p in burners:
        p.start()
    try:
        time.sleep(0.5)
        fn()
    finally:
        stop.set()
        for p in burners:
            p.join()


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    t0 = time.perf_counter()
    entries = long_entries(args.longmemeval)
    long_texts = [embedding_text(e.content) for e in entries]
    short_texts = [shorten(t) for t in long_texts if len(t) >= SHORT_CHARS]
    qs = questions(args.longmemeval, args.locomo, args.queries)
    settings = load_settings()
    if settings.max_content_bytes < lme.CONTENT_BYTES:  # some turns are over 64 KiB
        settings = settings.model_copy(update={"max_content_bytes": lme.CONTENT_BYTES})

    subjects: list[Subject] = []
    skipped: dict[str, str] = {}
    for spec in args.embedders:
        try:
            t = time.perf_counter()
            emb = build(spec)
            emb.embed("warm up")
        except Exception as exc:  # a missing package, a failed export, ...
            log(f"skip {spec}: {type(exc).__name__}: {exc}")
            skipped[spec] = f"{type(exc).__name__}: {exc}"
            continue
        s = Subject(spec, emb)
        s.n_long = _size(emb, long_texts, args.seconds, args.turns)
        s.n_short = _size(emb, short_texts, args.seconds, args.turns)
        log(f"{spec}: built in {time.perf_counter() - t:.1f} s; {s.n_long} long turns, "
            f"{s.n_short} short texts")  # fmt: skip
        subjects.append(s)
    if not subjects:
        raise SystemExit("no embedder could be built")

    with tempfile.TemporaryDirectory(prefix="embedders-") as tmp:
        for r in range(args.rounds):
            shift = r % len(subjects)
            for s in [*subjects[shift:], *subjects[:shift]]:
                s.long.append(_rate(s.emb, long_texts[: s.n_long]))
                s.short.append(_rate(s.emb, short_texts[: s.n_short]))
                s.add_many.append(_add_many_rate(s.emb, entries[: s.n_long], Path(tmp), settings))
            log(f"round {r + 1}/{args.rounds} done, {time.perf_counter() - t0:.0f} s")
    _query_times(subjects, qs, "query")
    log(f"queries done, {time.perf_counter() - t0:.0f} s")
    _with_load(args.load, lambda: _query_times(subjects, qs, "query_load"))
    log(f"queries under load done, {time.perf_counter() - t0:.0f} s")

    base = next((s for s in subjects if s.spec == "local"), None)
    base_long = statistics.median(base.long) if base else None
    rows = {}
    for s in subjects:
        med = statistics.median(s.long)
        rows[s.spec] = {
            "model": s.emb.model,
            "threads": getattr(s.emb, "threads", None),
            "n_long": s.n_long,
            "mean_chars_long": round(statistics.mean(map(len, long_texts[: s.n_long])), 1),
            "n_short": s.n_short,
            "mean_chars_short": round(statistics.mean(map(len, short_texts[: s.n_short])), 1),
            "long_texts_s": round(med, 1),
            "short_texts_s": round(statistics.median(s.short), 1),
            "add_many_s": round(statistics.median(s.add_many), 1),
            "x_local_long": round(med / base_long, 2) if base_long else None,
            "query_p50_ms": round(statistics.median(s.query), 2),
            "query_p95_ms": round(_pct(s.query, 0.95), 2),
            "query_load_p50_ms": round(statistics.median(s.query_load), 2),
            "query_load_p95_ms": round(_pct(s.query_load, 0.95), 2),
            "rounds": {"long": s.long, "short": s.short, "add_many": s.add_many},
        }
    return {
        "cores": os.cpu_count(),
        "load": args.load,
        "rounds": args.rounds,
        "queries": len(qs),
        "seconds": args.seconds,
        "turns_max": args.turns,
        "skipped": skipped,
        "embedders": rows,
        "total_s": round(time.perf_counter() - t0, 1),
    }


def format_table(report: dict[str, Any]) -> str:
    head = ("embedder", "texts/s long", "texts/s short", "add_many mem/s", "x local",
            "query p50", "p95", "p95 under load", "n long/short")  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for spec, r in report["embedders"].items():
        ratio = f"{r['x_local_long']:.2f}" if r["x_local_long"] is not None else "-"
        cells = (spec, f"{r['long_texts_s']:,.1f}", f"{r['short_texts_s']:,.1f}",
                 f"{r['add_many_s']:,.1f}", ratio, f"{r['query_p50_ms']:.2f}",
                 f"{r['query_p95_ms']:.2f}", f"{r['query_load_p95_ms']:.2f}",
                 f"{r['n_long']}/{r['n_short']}")  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", nargs="+", default=DEFAULT_EMBEDDERS)
    parser.add_argument("--longmemeval", default="../shared/data/longmemeval/dev.json.gz")
    parser.add_argument("--locomo", default="../shared/data/locomo")
    parser.add_argument("--turns", type=int, default=2000, help="at most this many texts each")
    parser.add_argument("--seconds", type=float, default=8.0,
                        help="size each embedder's texts to about this long a call")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1,
                        help="busy processes of the load (default: one per core)")  # fmt: skip
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    report = run(args, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(
        f"{report['cores']} cores; {report['rounds']} rounds; {report['queries']} queries; "
        f"load = {report['load']} busy processes; {report['total_s']:.0f} s\n"
    )
    print(format_table(report))
    for spec, why in report["skipped"].items():
        print(f"skipped {spec}: {why}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
