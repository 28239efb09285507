"""The LongMemEval retrieval benchmark: do the evidence turns and sessions come back?

Each question has its own haystack, logged into a fresh store through the public
write path agents use (``bench.harness.ingest``: one ``Memory.add`` per turn, or
``add_many`` per session): one memory per turn, text ``"user: ..."`` /
``"assistant: ..."`` (the role also in metadata, with the turn's index), the
session's id, each turn stamped a minute after the previous one from its
session's date, kept permanently, never refused as a duplicate. The question is
then asked through ``Memory.search`` with ``now`` = the question's date and
``limit`` = :data:`LIMIT`; the same turn texts (and the vectors memchentic
stored for them) go through the baselines of ``bench.harness.baselines``.
Abstention questions (ids ending in ``_abs``) are left out: they have no evidence.

Metrics per question (evidence turns E: ``has_answer``; answer sessions A:
``answer_session_ids``; ranked turns R; ranked sessions S: the sessions of R in
the order they first appear):

- turn recall@k = |E ∩ R[:k]| / |E| for k = 1, 5, 10, 20;
- session recall@k = |A ∩ S[:k]| / |A| for k = 5, 10;
- session NDCG@10 = sum over S[:10] of rel / log2(rank + 1), rel = 1 for a
  session in A, over the same sum for the ideal order;
- MRR = 1 / (rank of the first evidence turn in R), 0 if none.

Averages are over questions, overall and per question type.
"""

from __future__ import annotations

import gzip
import json
import math
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memchentic import Embedder, Memory, Settings
from memchentic.embed import get_embedder
from memchentic.settings import load_settings
from memchentic.write.statements import embedding_text

from . import baselines as bl
from . import cli
from .cache import DEFAULT_PATH, DiskCachedEmbedder
from .ingest import Entry, copy_store, stamp, warm
from .ingest import ingest as log_turns

TURN_KS = (1, 5, 10, 20)
SESSION_KS = (5, 10)
#: Turns asked for per question: deep enough for ten distinct sessions.
LIMIT = 50
METRICS = (
    *(f"turn_recall@{k}" for k in TURN_KS),
    *(f"session_recall@{k}" for k in SESSION_KS),
    "session_ndcg@10",
    "mrr",
)
#: Some haystack turns are longer than MAX_CONTENT_BYTES' 64 KiB.
CONTENT_BYTES = 1 << 20


# --- data ---------------------------------------------------------------------------
def parse_date(text: str) -> datetime:
    """``"2023/05/30 (Tue) 23:40"`` as an aware UTC datetime."""
    day, _, rest = text.partition(" (")
    return datetime.strptime(f"{day} {rest.partition(') ')[2]}", "%Y/%m/%d %H:%M").replace(
        tzinfo=UTC
    )


def turn_key(session_id: str, index: int) -> str:
    """A turn's name: its session's id and its index in the session."""
    return f"{session_id}#{index}"


def session_of(key: str) -> str:
    return key.rpartition("#")[0]


@dataclass(slots=True)
class Question:
    id: str
    type: str
    question: str
    date: datetime
    entries: list[Entry]
    keys: list[str]  # the turn key of each entry
    evidence: set[str]
    answer_sessions: set[str]


def read(path: str | Path) -> list[dict[str, Any]]:
    """The raw items of a LongMemEval file (``.json`` or ``.json.gz``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no LongMemEval file at {path}")
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return list(json.load(handle))


def question_of(item: Mapping[str, Any]) -> Question:
    entries: list[Entry] = []
    keys: list[str] = []
    evidence: set[str] = set()
    for sid, date, session in zip(
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"],
        strict=True,
    ):  # fmt: skip
        start = parse_date(date)
        for i, turn in enumerate(session):
            key = turn_key(sid, i)
            role = turn["role"]
            entries.append(Entry(f"{role}: {turn['content']}", sid, stamp(start, i),
                                 {"role": role, "turn": i}))  # fmt: skip
            keys.append(key)
            if turn.get("has_answer"):
                evidence.add(key)
    return Question(
        str(item["question_id"]), str(item["question_type"]), str(item["question"]),
        parse_date(item["question_date"]), entries, keys, evidence,
        set(item.get("answer_session_ids") or []),
    )  # fmt: skip


def spread(items: Sequence[Mapping[str, Any]], n: int) -> list[Mapping[str, Any]]:
    """``n`` items taken in turn from each question type (file order within a type)."""
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for it in items:
        by_type.setdefault(str(it["question_type"]), []).append(it)
    out: list[Mapping[str, Any]] = []
    queues = list(by_type.values())
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    order = {id(it): i for i, it in enumerate(items)}
    return sorted(out, key=lambda it: order[id(it)])


def load(
    path: str | Path, *, types: Iterable[str] | None = None, max_questions: int | None = None
) -> tuple[list[Question], dict[str, int]]:
    """The questions to ask, and counts of what was left out."""
    items = read(path)
    left_out = {"abstention": 0, "no_evidence": 0}
    kept: list[Mapping[str, Any]] = []
    wanted = set(types or ())
    for it in items:
        if str(it["question_id"]).endswith("_abs"):
            left_out["abstention"] += 1
        elif wanted and it["question_type"] not in wanted:
            continue
        else:
            kept.append(it)
    if max_questions is not None:
        kept = spread(kept, max_questions)
    questions = []
    for item in kept:
        q = question_of(item)
        if q.evidence:
            questions.append(q)
        else:
            left_out["no_evidence"] += 1
    return questions, left_out


# --- metrics ------------------------------------------------------------------------
def question_metrics(
    ranked: Sequence[str], evidence: Iterable[str], answer_sessions: Iterable[str]
) -> dict[str, float]:
    """Turn and session metrics of one question; ``ranked`` holds turn keys."""
    ev, ans = set(evidence), set(answer_sessions)
    if not ev:
        raise ValueError("a question needs evidence turns")
    out = {f"turn_recall@{k}": len(ev.intersection(ranked[:k])) / len(ev) for k in TURN_KS}
    sessions = list(dict.fromkeys(session_of(k) for k in ranked))
    for k in SESSION_KS:
        out[f"session_recall@{k}"] = len(ans.intersection(sessions[:k])) / len(ans) if ans else 0.0
    dcg = sum(1 / math.log2(r + 1) for r, s in enumerate(sessions[:10], start=1) if s in ans)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(ans), 10) + 1))
    out["session_ndcg@10"] = dcg / ideal if ideal else 0.0
    first = next((i for i, key in enumerate(ranked, start=1) if key in ev), None)
    out["mrr"] = 1.0 / first if first else 0.0
    return out


def aggregate(rows: Sequence[tuple[str, Mapping[str, float]]]) -> dict[str, Any]:
    """Mean of each metric overall and per question type; ``n`` = questions."""
    overall, by_type = cli.group_means(rows, METRICS + cli.extra_metrics(rows))
    return {"overall": overall, "by_type": by_type}


# --- running ------------------------------------------------------------------------
@dataclass
class Run:
    """What one system did on the whole split."""

    rows: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    seconds: float = 0.0
    ranked: dict[str, list[str]] = field(default_factory=dict)

    def record(
        self, q: Question, ranked: list[str], seconds: float,
        extra: Mapping[str, float] | None = None,
    ) -> None:  # fmt: skip
        self.seconds += seconds
        self.ranked[q.id] = ranked
        metrics = question_metrics(ranked, q.evidence, q.answer_sessions)
        self.rows.append((q.type, metrics | dict(extra or {})))


def _ask(
    q: Question,
    path: Path,
    emb: Embedder,
    variants: Mapping[str, Settings],
    *,
    mode: str,
    profile: str | None,
    runs: dict[str, Run],
    baselines: bool,
    budgets: Sequence[int] = (),
) -> float:
    """Log one haystack, ask its question in memchentic (each variant on its own
    copy of the fresh store, so no variant sees another's recalls) and the
    baselines; the seconds the ingest took."""
    warm(emb, q.entries)
    qvec = emb.embed_batch([embedding_text(q.question)])[0]
    base = variants["memchentic"]
    with Memory(path=path, embedder=emb, settings=base) as mem:
        start = time.perf_counter()
        ids = log_turns(mem, q.entries, user_id="u", mode=mode)
        ingest_s = time.perf_counter() - start
        stored = mem.store.vectors(ids) if baselines else {}
    key_of = dict(zip(ids, q.keys, strict=True))
    for name, settings in variants.items():
        copy = copy_store(path, path.parent / name.replace("/", "_"))
        with Memory(path=copy, embedder=emb, settings=settings) as mem:
            start = time.perf_counter()
            hits = mem.search(q.question, user_id="u", limit=LIMIT, now=q.date, profile=profile)
            took = time.perf_counter() - start
            extra: dict[str, float] = {}
            if budgets:
                ev = {i for i, key in key_of.items() if key in q.evidence}
                extra = cli.context_recall(mem, q.question, ev, budgets, user_id="u", now=q.date)
        runs.setdefault(name, Run()).record(q, [key_of[h.memory.id] for h in hits], took, extra)
    if not baselines:
        return ingest_s
    matrix = np.vstack([stored[i] for i in ids]).astype(np.float32)
    start = time.perf_counter()
    suite = bl.Suite([e.content for e in q.entries], matrix)
    build = (time.perf_counter() - start) / 2
    for name in bl.NAMES:
        start = time.perf_counter()
        order = suite.rank(name, q.question, qvec, LIMIT)
        took = time.perf_counter() - start + (build if name.startswith("bm25") else 0.0)
        runs.setdefault(name, Run()).record(q, [q.keys[i] for i in order], took)
    return ingest_s


def run_benchmark(
    data: str | Path,
    *,
    embedder: str | Embedder = "local",
    profile: str | None = None,
    settings: Settings | None = None,
    types: Iterable[str] | None = None,
    max_questions: int | None = None,
    baselines: bool = True,
    ingest: str = "add",
    cache: str | Path | None = DEFAULT_PATH,
    workdir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    ablations: Mapping[str, Mapping[str, Any]] | None = None,
    context_budgets: Sequence[int] = (),
) -> dict[str, Any]:
    """Run the benchmark; returns the report (see :func:`format_report`). Each
    question's store is built under ``workdir`` (default: a temporary folder) and
    removed after its question; vectors are cached in the SQLite file ``cache``.
    ``ablations``: named settings overrides, each asked every question too;
    ``context_budgets``: also measure ``context@B`` (``cli.context_recall``)."""
    t0 = time.perf_counter()
    base = settings or load_settings()
    if base.max_content_bytes < CONTENT_BYTES:
        base = base.model_copy(update={"max_content_bytes": CONTENT_BYTES})
    inner = embedder if isinstance(embedder, Embedder) else get_embedder(embedder, base)
    emb = DiskCachedEmbedder(inner, cache)
    questions, left_out = load(data, types=types, max_questions=max_questions)
    variants = cli.variants(base, ablations)
    runs: dict[str, Run] = {}
    ingest_s = 0.0
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    for n, q in enumerate(questions, start=1):
        with tempfile.TemporaryDirectory(prefix="longmemeval-", dir=workdir) as tmp:
            ingest_s += _ask(q, Path(tmp) / "memory.db", emb, variants, mode=ingest,
                             profile=profile, runs=runs, baselines=baselines,
                             budgets=context_budgets)  # fmt: skip
        if progress:
            progress(f"{n}/{len(questions)} {q.id} ({q.type}): {len(q.entries)} turns; "
                     f"{emb.computed} embedded, {time.perf_counter() - t0:.0f} s")  # fmt: skip
    emb.close()
    every = {
        name: {
            **aggregate(r.rows),
            "search_s": round(r.seconds, 3),
            "ms_per_query": round(1000 * r.seconds / max(len(r.rows), 1), 2),
        }
        for name, r in runs.items()
    }
    systems = {k: v for k, v in every.items() if k not in variants or k == "memchentic"}
    return {
        "data": str(data),
        "embedder": emb.model,
        "profile": profile or base.search_profile,
        "ingest": ingest,
        "limit": LIMIT,
        "questions": len(questions),
        "turns": sum(len(q.entries) for q in questions),
        "left_out": left_out,
        "embedded": emb.computed,
        "ingest_s": round(ingest_s, 3),
        "total_s": round(time.perf_counter() - t0, 3),
        "systems": systems,
        "ablations": {k: v for k, v in every.items() if k in variants and k != "memchentic"},
        "_ranked": {name: r.ranked for name, r in runs.items()},
    }


# --- printing -----------------------------------------------------------------------
SHORT = {
    "turn_recall@1": "t r@1", "turn_recall@5": "t r@5", "turn_recall@10": "t r@10",
    "turn_recall@20": "t r@20", "session_recall@5": "s r@5", "session_recall@10": "s r@10",
    "session_ndcg@10": "s ndcg10", "mrr": "mrr",
}  # fmt: skip
TYPE_SHORT = {
    "knowledge-update": "k-update", "multi-session": "multi-s", "temporal-reasoning": "temporal",
    "single-session-assistant": "ss-asst", "single-session-preference": "ss-pref",
    "single-session-user": "ss-user",
}  # fmt: skip


def _row(name: str, cells: Sequence[str], width: int = 22) -> str:
    return f"{name:<{width}}" + "".join(f"{c:>10}" for c in cells)


def format_report(report: Mapping[str, Any]) -> str:
    left = report["left_out"]
    lines = [
        f"LongMemEval retrieval: {report['questions']} questions, {report['turns']} turns "
        f"(left out: {left['abstention']} abstention, {left['no_evidence']} without "
        f"evidence); embedder {report['embedder']}; profile {report['profile']}; "
        f"top {report['limit']} turns",
        f"ingest ({report['ingest']}) {report['ingest_s']:.1f} s, whole run "
        f"{report['total_s']:.1f} s, {report['embedded']} texts embedded (the rest cached)",
        "(t = turn, s = session)",
        "",
        _row("system", [*(SHORT[m] for m in METRICS), "ms/query"]),
    ]
    systems: dict[str, Any] = dict(report["systems"])
    for name, s in systems.items():
        o = s["overall"]
        lines.append(_row(name, [f"{o[m]:.3f}" for m in METRICS] + [f"{s['ms_per_query']:.1f}"]))
    types = sorted({t for s in systems.values() for t in s["by_type"]})
    for metric in ("turn_recall@10", "session_recall@10"):
        lines += ["", f"{metric} by question type (n questions)"]
        lines.append(_row("system", [TYPE_SHORT.get(t, t[:9]) for t in types]
                          + ["overall"]))  # fmt: skip
        for name, s in systems.items():
            cells = [f"{s['by_type'][t][metric]:.3f}" for t in types]
            lines.append(_row(name, cells + [f"{s['overall'][metric]:.3f}"]))
        ns = next(iter(systems.values()))["by_type"] if systems else {}
        lines.append(_row("n", [str(ns[t]["n"]) for t in types] + [str(report["questions"])]))
    lines += cli.context_lines(report, _row)
    if report.get("ablations"):
        ref = systems.get("memchentic", {}).get("overall", {}).get("turn_recall@10", 0.0)
        lines += ["", "ablations (each changes one setting from the defaults)"]
        lines.append(_row("variant", [*(SHORT[m] for m in METRICS), "Δ t r@10"], width=42))
        for name, s in report["ablations"].items():
            o = s["overall"]
            cells = [f"{o[m]:.3f}" for m in METRICS] + [f"{o['turn_recall@10'] - ref:+.3f}"]
            lines.append(_row(name, cells, width=42))
    return "\n".join(lines)


public = cli.public  # the report without internal fields (for --json)
