"""The write rate of real conversation turns (issue 36, item 3's measurement).

The turns of the LoCoMo dev conversations and of ``--questions`` LongMemEval dev
haystacks are written, one store per conversation, through the public write
path under the default policy: duplicates and contradictions checked against
what is stored (the turns carry no speaker metadata, so they are resolved as
knowledge is), secrets scanned (``SECRET_POLICY`` refuse), entities and
polarity found. Each turn is ``{"content": "Speaker: text", "session_id",
"created_at", "metadata": {"turn": ...}}`` in its conversation's user
namespace; ``--log`` writes them the way an agent logs turns instead (the
README's recipe: episodic, ``on_duplicate="keep"``, the speaker in metadata).

Two ways, each on fresh stores:

- ``add_many``: one :meth:`Memory.add_many` per session (the batch an agent has
  at the end of a session);
- ``add``: one :meth:`Memory.add` per turn.

Engine time only: vectors come from the cache (``bench/results/embeddings.sqlite``,
``bench.harness.cache``; every turn is embedded before the clock starts), and the
time spent inside the embedder during a call (a cache lookup) is subtracted.
``--static`` writes with the static embedder end to end instead (its time
counted). The figure is memories a second over every turn, the median of
``--repeat`` runs. ``outcomes`` is a digest of every write's status and reason
(the same digest before and after a change: the same outcomes).
``--profile N`` runs cProfile over one more pass of each way and prints the top
N functions by own and by cumulative time.

Usage::

    python bench/write_rate.py                          # SQLite, MiniLM vectors (cached)
    python bench/write_rate.py --backend postgres       # an embedded PostgreSQL
    python bench/write_rate.py --static                 # the static embedder, end to end
    python bench/write_rate.py --profile 25 --repeat 1  # and where the time goes
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import itertools
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cache, locomo, longmemeval  # noqa: E402
from bench.harness.cache import Stopwatch  # noqa: E402
from bench.harness.ingest import Entry  # noqa: E402
from bench.harness.profiling import profile_tables  # noqa: E402
from bench.write_decisions import store_location  # noqa: E402
from memchentic import Embedder, Memory, WriteResult, get_embedder  # noqa: E402
from memchentic.settings import Settings, load_settings  # noqa: E402
from memchentic.write.statements import memory_embedding_text  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
WAYS = ("add_many", "add")
#: Metadata keys that name the speaker: left out of a turn under the default policy
#: (a turn that names its speaker is a record of speech, never resolved).
_SPEAKER = ("speaker", "role")


@dataclass(frozen=True, slots=True)
class Conversation:
    """The turns of one conversation (one store, one user)."""

    name: str
    entries: list[Entry]


def conversations(data: Path, questions: int) -> list[Conversation]:
    """The LoCoMo dev conversations, then ``questions`` LongMemEval dev haystacks."""
    out: list[Conversation] = []
    if (data / "locomo").is_dir():
        for conv in locomo.load(data / "locomo"):
            out.append(Conversation(f"locomo-{conv.id}", [
                Entry(t.content, f"session-{t.session}", t.when,
                      {"speaker": t.speaker, "turn": t.dia_id})
                for t in conv.turns
            ]))  # fmt: skip
    lme = data / "longmemeval" / "dev.json.gz"
    if questions and lme.is_file():
        loaded, _ = longmemeval.load(lme, max_questions=questions)
        out += [Conversation(f"longmemeval-{q.id}", q.entries) for q in loaded]
    if not out:
        raise FileNotFoundError(f"no LoCoMo or LongMemEval data under {data}")
    return out


def _item(entry: Entry, log: bool) -> dict[str, Any]:
    meta = dict(entry.metadata)
    if not log:
        meta = {k: v for k, v in meta.items() if k not in _SPEAKER}
    return {"content": entry.content, "session_id": entry.session_id, "metadata": meta,
            "created_at": entry.at, "now": entry.at}  # fmt: skip


def write(mem: Memory, conv: Conversation, way: str, log: bool) -> list[WriteResult]:
    """Every turn of ``conv`` through ``way``, in order."""
    common: dict[str, Any] = {"user_id": conv.name}
    if log:
        common.update(type="episodic", on_duplicate="keep", permanent=True)
    if way == "add":
        return [mem.add(**_item(e, log), **common) for e in conv.entries]
    results: list[WriteResult] = []
    for _, session in itertools.groupby(conv.entries, key=lambda e: e.session_id):
        results += mem.add_many([_item(e, log) for e in session], **common)
    return results


def digest(results: Sequence[WriteResult]) -> str:
    """A short digest of every write's status and reason, in order."""
    text = "\n".join(f"{r.status}\t{r.reason or ''}" for r in results)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def blas_threads() -> int | None:
    """The threads numpy's BLAS runs on (None when threadpoolctl cannot say). On a
    busy machine a multi-threaded product stalls: OPENBLAS_NUM_THREADS=1 makes
    the figures steadier (bench/README.md)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    found = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    return found[0] if found else None


def _settings() -> Settings:
    settings = load_settings()
    if settings.max_content_bytes < longmemeval.CONTENT_BYTES:  # long assistant replies
        settings = settings.model_copy(update={"max_content_bytes": longmemeval.CONTENT_BYTES})
    return settings


def run(
    convs: Sequence[Conversation], *, backend: str = "sqlite", embedder: str = "local",
    static: bool = False, repeat: int = 3, log: bool = False, profile: int = 0,
    ways: Sequence[str] = WAYS, cache_path: Path | None = cache.DEFAULT_PATH,
    postgres_url: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The figures of every way (see the module docstring)."""
    settings = _settings()
    if static:
        inner: Embedder = get_embedder("static", settings)
    else:
        inner = cache.DiskCachedEmbedder(get_embedder(embedder, settings), cache_path)
        texts = [memory_embedding_text(None, e.content) for c in convs for e in c.entries]
        inner.embed_batch(texts)  # before the clock: every write finds its vector
    emb = Stopwatch(inner)
    turns = sum(len(c.entries) for c in convs)
    report: dict[str, Any] = {
        "backend": backend, "embedder": emb.model, "end_to_end": static,
        "policy": "log" if log else "default", "conversations": len(convs), "turns": turns,
        "repeat": repeat, "blas_threads": blas_threads(), "ways": {},
    }  # fmt: skip
    stores = itertools.count()
    with store_location(backend, postgres_url) as location:

        def one_pass(way: str, hook: Callable[[Callable[[], Any]], Any] | None = None) -> Any:
            seconds, cpu, results = 0.0, 0.0, []
            for conv in convs:
                with Memory(location(f"{way}{next(stores)}"), embedder=emb,
                            settings=settings) as mem:  # fmt: skip
                    before, began, began_cpu = emb.seconds, time.perf_counter(), time.process_time()
                    done = (hook or (lambda f: f()))(lambda m=mem, c=conv: write(m, c, way, log))
                    seconds += time.perf_counter() - began
                    cpu += time.process_time() - began_cpu
                    if not static:
                        seconds -= emb.seconds - before
                        cpu -= emb.seconds - before  # a cache lookup: CPU all along
                    results += done
            return seconds, cpu, results

        warm = Conversation("warm-up", convs[0].entries[:40])
        for way in ways:
            with Memory(location(f"warm_{way}"), embedder=emb, settings=settings) as mem:
                write(mem, warm, way, log)  # lazy imports and caches
            rates: list[float] = []
            cpu_rates: list[float] = []
            results: list[WriteResult] = []
            for _ in range(repeat):
                seconds, cpu, results = one_pass(way)
                rates.append(turns / seconds)
                cpu_rates.append(turns / cpu)
            rate = statistics.median(rates)
            figures: dict[str, Any] = {
                "memories_per_s": round(rate, 1), "ms_per_memory": round(1000 / rate, 3),
                "runs": [round(r, 1) for r in rates],
                # the process's CPU time (all its threads): steadier than the clock on a
                # busy machine, where a run waits for a core
                "cpu_memories_per_s": round(statistics.median(cpu_rates), 1),
                "cpu_runs": [round(r, 1) for r in cpu_rates],
                "statuses": dict(sorted(Counter(r.status for r in results).items())),
                "outcomes": digest(results),
            }  # fmt: skip
            if profile:
                profiler = cProfile.Profile()

                def profiled(f: Callable[[], Any], p: cProfile.Profile = profiler) -> Any:
                    return p.runcall(f)

                one_pass(way, profiled)
                figures["profile"] = profile_tables(profiler, profile)
            report["ways"][way] = figures
            print(f"{way}: {figures['memories_per_s']} memories/s", file=sys.stderr)
    report["at"] = datetime.now(UTC).isoformat(timespec="seconds")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA,
                        help="holds locomo/ and longmemeval/ (default: %(default)s)")  # fmt: skip
    parser.add_argument("--questions", type=int, default=4,
                        help="LongMemEval haystacks (about 500 turns each; default 4)")  # fmt: skip
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--postgres-url", help="a server with pgvector (default: embedded)")
    parser.add_argument("--way", choices=WAYS, action="append", help="default: both")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each way (median)")
    parser.add_argument("--static", action="store_true",
                        help="the static embedder, end to end (its time counted)")  # fmt: skip
    parser.add_argument("--embedder", default="local",
                        help="the cached vectors of this embedder (default: local)")  # fmt: skip
    parser.add_argument("--log", action="store_true",
                        help="write as an agent logs turns (episodic, keep, speaker)")  # fmt: skip
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile one more pass; print the top N functions")  # fmt: skip
    parser.add_argument("--cache", default=str(cache.DEFAULT_PATH),
                        help="the vector cache (default: %(default)s; 'none': none)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args(argv)
    convs = conversations(args.data, args.questions)
    r = run(convs, backend=args.backend, embedder=args.embedder, static=args.static,
            repeat=args.repeat, log=args.log, profile=args.profile, ways=args.way or WAYS,
            cache_path=None if args.cache == "none" else Path(args.cache),
            postgres_url=args.postgres_url)  # fmt: skip
    what = "end to end (embedder included)" if r["end_to_end"] else "engine time (no embedder)"
    print(f"{r['backend']}, {r['embedder']}, {r['policy']} policy, {r['conversations']} "
          f"conversations, {r['turns']} turns, median of {r['repeat']}, "
          f"BLAS threads {r['blas_threads']}; {what}:")  # fmt: skip
    for way, f in r["ways"].items():
        print(f"  {way:9} {f['memories_per_s']:>8} memories/s  {f['ms_per_memory']:>7} ms each"
              f"  runs {f['runs']}  CPU {f['cpu_memories_per_s']}/s {f['cpu_runs']}"
              f"  {f['statuses']}  outcomes {f['outcomes']}")  # fmt: skip
    for way, f in r["ways"].items():
        for key, text in (f.get("profile") or {}).items():
            print(f"\ncProfile, {way}, by {key}:\n{text}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
