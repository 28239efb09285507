"""The LoCoMo retrieval benchmark: does the right conversation turn come back?

For each conversation every turn becomes one memory in a fresh store, through the
public write path agents use (``bench.harness.ingest``: one ``Memory.add`` per
turn, or ``add_many`` per session with ``ingest="add_many"``): text
``"Speaker: text"`` (plus ``"[shares a photo: caption]"``), ``created_at`` =
``valid_from`` = the session's date and time plus a minute per turn before it in
the session, ``session_id`` = the session, metadata ``speaker`` and ``dia_id``,
one user namespace per conversation, kept permanently (a transcript does not
expire) and never refused as a duplicate. Every question with evidence is then
asked through ``Memory.search`` with ``now`` = the end of the conversation (the
time of its last turn), so freshness and decay see the real ages of the turns.
The same work also runs through independent baselines (BM25, stemmed BM25, dense
cosine with the same embedder vectors, and plain RRF of stemmed BM25 and dense).
Vectors are cached on disk by text hash (``bench.harness.cache``).

Recalls are counted as in production (``search`` counts each hit, debounced to
once per ``MEMORY_TTL_TOUCH_DEBOUNCE_HOURS``); since every question of a
conversation has the same ``now``, each memory counts at most once per run.
Every system (and every ablation) starts from an identical copy of the freshly
ingested store, so no run sees another's recalls.

Metrics per question (evidence E, ranked list R of dia_ids):
recall@k = |E ∩ R[:k]| / |E| for k = 1, 5, 10, 20; hit@10 = 1 if any evidence
is in R[:10]; MRR = 1 / (rank of the first evidence turn in R[:20]), 0 if none.
Averages are over questions, overall and per category (1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop, 5 adversarial).
"""

from __future__ import annotations

import json
import re
import shutil
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

from . import baselines as bl
from . import cli
from .cache import DEFAULT_PATH, DiskCachedEmbedder
from .ingest import Entry, copy_store, stamp, warm
from .ingest import ingest as log_turns

KS = (1, 5, 10, 20)
LIMIT = 20
CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
METRICS = ("recall@1", "recall@5", "recall@10", "recall@20", "hit@10", "mrr")
BASELINES = bl.NAMES
#: The ablations (shared with LongMemEval, ``cli.ABLATIONS``).
ABLATIONS = cli.ABLATIONS


# --- data ---------------------------------------------------------------------------
@dataclass(slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    when: datetime  # the session's date and time plus a minute per turn before it
    caption: str | None = None

    @property
    def content(self) -> str:
        body = f"{self.speaker}: {self.text}"
        if self.caption:
            body += f" [shares a photo: {self.caption}]"
        return body


@dataclass(slots=True)
class Question:
    question: str
    category: int
    evidence: list[str]


@dataclass(slots=True)
class Conversation:
    id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    end: datetime
    dropped_evidence: int = 0


def parse_when(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    clean = " ".join(text.replace(",", ", ").split()).replace(" ,", ",")
    return datetime.strptime(clean, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _evidence_ids(raw: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            part = re.sub(r"^D:", "D", part.strip())
            if part:
                out.append(part)
    return list(dict.fromkeys(out))


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = sorted(
        (int(m.group(1)) for k in data if (m := re.fullmatch(r"session_(\d+)", k))),
    )
    turns: list[Turn] = []
    for n in sessions:
        start = parse_when(data[f"session_{n}_date_time"])
        for i, t in enumerate(data[f"session_{n}"]):
            turns.append(Turn(t["dia_id"], t["speaker"], t["text"], n, stamp(start, i),
                              t.get("blip_caption") or None))  # fmt: skip
    known = {t.dia_id for t in turns}
    questions, dropped = [], 0
    for q in data.get("qa", []):
        ids = _evidence_ids(q.get("evidence") or [])
        kept = [i for i in ids if i in known]
        dropped += len(ids) - len(kept)
        if kept:
            questions.append(Question(str(q["question"]), int(q["category"]), kept))
    end = max(t.when for t in turns)
    conv_id = path.stem.removeprefix("conv-")
    return Conversation(
        conv_id, (data["speaker_a"], data["speaker_b"]), turns, questions, end, dropped
    )


def load(data_dir: str | Path) -> list[Conversation]:
    files = sorted(Path(data_dir).glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no conversation files (*.json) in {data_dir}")
    return [load_conversation(f) for f in files]


# --- metrics ------------------------------------------------------------------------
def question_metrics(ranked: Sequence[str], evidence: Iterable[str]) -> dict[str, float]:
    """recall@k (k in KS), hit@10 and MRR (over the top ``LIMIT``) of one question."""
    ev = set(evidence)
    if not ev:
        raise ValueError("a question needs evidence")
    out = {f"recall@{k}": len(ev.intersection(ranked[:k])) / len(ev) for k in KS}
    out["hit@10"] = 1.0 if ev.intersection(ranked[:10]) else 0.0
    first = next((i for i, item in enumerate(ranked[:LIMIT], start=1) if item in ev), None)
    out["mrr"] = 1.0 / first if first else 0.0
    return out


def aggregate(rows: Sequence[tuple[int, Mapping[str, float]]]) -> dict[str, Any]:
    """Mean of each metric overall and per category; ``n`` = questions."""
    overall, by_cat = cli.group_means(rows, METRICS + cli.extra_metrics(rows))
    return {"overall": overall, "by_category": by_cat}


# --- running ------------------------------------------------------------------------
@dataclass
class Run:
    """What one system did on the whole split."""

    rows: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    seconds: float = 0.0
    queries: int = 0
    ranked: list[list[str]] = field(default_factory=list)


def _ingest(
    conv: Conversation, path: Path, embedder: Embedder, settings: Settings, mode: str
) -> dict[str, str]:
    """Every turn into a fresh store at ``path``; memory id -> dia_id."""
    entries = [
        Entry(t.content, f"session-{t.session}", t.when, {"speaker": t.speaker, "dia_id": t.dia_id})
        for t in conv.turns
    ]
    warm(embedder, entries)
    with Memory(path=path, embedder=embedder, settings=settings) as mem:
        ids = log_turns(mem, entries, user_id=f"conv-{conv.id}", mode=mode)
    return {i: t.dia_id for i, t in zip(ids, conv.turns, strict=True)}


def _search_run(
    conv: Conversation,
    snapshot: Path,
    work: Path,
    embedder: Embedder,
    settings: Settings,
    dia_of: Mapping[str, str],
    profile: str | None,
    run: Run,
    budgets: Sequence[int] = (),
) -> None:
    path = copy_store(snapshot, work)
    id_of = {dia: i for i, dia in dia_of.items()}
    with Memory(path=path, embedder=embedder, settings=settings) as mem:
        user = f"conv-{conv.id}"
        for q in conv.questions:
            start = time.perf_counter()
            hits = mem.search(q.question, user_id=user, limit=LIMIT, now=conv.end, profile=profile)
            run.seconds += time.perf_counter() - start
            run.queries += 1
            ranked = [dia_of.get(h.memory.id, "") for h in hits]
            run.ranked.append(ranked)
            metrics = question_metrics(ranked, q.evidence)
            if budgets:
                ev = {id_of[d] for d in q.evidence if d in id_of}
                metrics |= cli.context_recall(mem, q.question, ev, budgets, user_id=user,
                                              now=conv.end)  # fmt: skip
            run.rows.append((q.category, metrics))
    shutil.rmtree(work, ignore_errors=True)


def _baseline_runs(
    conv: Conversation,
    vectors: np.ndarray,
    embedder: Embedder,
    runs: dict[str, Run],
) -> None:
    dia = [t.dia_id for t in conv.turns]
    qvecs = embedder.embed_batch([q.question for q in conv.questions])  # cached by search
    for name in BASELINES:
        runs.setdefault(name, Run())
    start = time.perf_counter()
    suite = bl.Suite([t.content for t in conv.turns], vectors)
    build = time.perf_counter() - start
    runs["bm25"].seconds += build / 2
    runs["bm25_stem"].seconds += build / 2
    for q, qv in zip(conv.questions, qvecs, strict=True):
        for name in BASELINES:
            start = time.perf_counter()
            order = suite.rank(name, q.question, qv, LIMIT)
            runs[name].seconds += time.perf_counter() - start
            runs[name].queries += 1
            ranked = [dia[i] for i in order]
            runs[name].ranked.append(ranked)
            runs[name].rows.append((q.category, question_metrics(ranked, q.evidence)))


def run_benchmark(
    data_dir: str | Path,
    *,
    embedder: str | Embedder = "local",
    profile: str | None = None,
    settings: Settings | None = None,
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
    ablations: Mapping[str, Mapping[str, Any]] | None = None,
    baselines: bool = True,
    ingest: str = "add",
    cache: str | Path | None = DEFAULT_PATH,
    workdir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    context_budgets: Sequence[int] = (),
) -> dict[str, Any]:
    """Run the benchmark; returns the report (see :func:`format_report`). Stores are
    built under ``workdir`` (default: a temporary folder, removed afterwards);
    vectors are cached in the SQLite file ``cache`` (``None``: in memory only).
    ``context_budgets``: also measure ``context@B`` (``cli.context_recall``) for
    memchentic and every ablation."""
    t0 = time.perf_counter()
    base = settings or load_settings()
    inner = embedder if isinstance(embedder, Embedder) else get_embedder(embedder, base)
    emb = DiskCachedEmbedder(inner, cache)
    convs = load(data_dir)
    if conversations:
        wanted = {str(c).removeprefix("conv-") for c in conversations}
        convs = [c for c in convs if c.id in wanted]
    if max_questions is not None:
        for c in convs:
            c.questions = c.questions[:max_questions]
    variants = cli.variants(base, ablations)
    runs: dict[str, Run] = {}
    ingest_s = 0.0
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="locomo-", dir=workdir) as tmp:
        for conv in convs:
            root = Path(tmp) / conv.id
            snap = root / "snapshot" / "memory.db"
            snap.parent.mkdir(parents=True)
            start = time.perf_counter()
            dia_of = _ingest(conv, snap, emb, base, ingest)
            ingest_s += time.perf_counter() - start
            if progress:
                progress(f"conv-{conv.id}: {len(conv.turns)} turns ingested")
            for name, vs in variants.items():
                _search_run(
                    conv, snap, root / name, emb, vs, dia_of, profile, runs.setdefault(name, Run()),
                    context_budgets,
                )  # fmt: skip
            if baselines:
                with Memory(path=snap, embedder=emb, settings=base) as mem:
                    by_id = mem.store.vectors(list(dia_of))
                order = {d: i for i, d in enumerate(t.dia_id for t in conv.turns)}
                matrix = np.zeros((len(conv.turns), emb.dimension), dtype=np.float32)
                for mid, vec in by_id.items():
                    matrix[order[dia_of[mid]]] = vec
                _baseline_runs(conv, matrix, emb, runs)
            if progress:
                progress(f"conv-{conv.id}: {len(conv.questions)} questions asked")
    systems = {
        name: {
            **aggregate(r.rows),
            "search_s": round(r.seconds, 3),
            "ms_per_query": round(1000 * r.seconds / max(r.queries, 1), 2),
        }
        for name, r in runs.items()
    }
    main = {k: v for k, v in systems.items() if k not in variants or k == "memchentic"}
    emb.close()
    return {
        "data": str(data_dir),
        "embedder": emb.model,
        "profile": profile or base.search_profile,
        "ingest": ingest,
        "embedded": emb.computed,
        "conversations": [c.id for c in convs],
        "turns": sum(len(c.turns) for c in convs),
        "questions": sum(len(c.questions) for c in convs),
        "dropped_evidence_ids": sum(c.dropped_evidence for c in convs),
        "ingest_s": round(ingest_s, 3),
        "total_s": round(time.perf_counter() - t0, 3),
        "systems": main,
        "ablations": {k: v for k, v in systems.items() if k in variants and k != "memchentic"},
        "_ranked": {name: r.ranked for name, r in runs.items()},
    }


# --- printing -----------------------------------------------------------------------
def _row(name: str, cells: Sequence[str], width: int = 22) -> str:
    return f"{name:<{width}}" + "".join(f"{c:>10}" for c in cells)


def format_report(report: Mapping[str, Any]) -> str:
    lines = [
        f"LoCoMo retrieval: {report['questions']} questions, {report['turns']} turns, "
        f"conversations {', '.join(report['conversations'])}; embedder {report['embedder']}; "
        f"profile {report['profile']}",
        f"ingest ({report['ingest']}) {report['ingest_s']:.1f} s, whole run "
        f"{report['total_s']:.1f} s, {report['embedded']} texts embedded (the rest cached)",
        "",
    ]
    systems: dict[str, Any] = dict(report["systems"])
    best_base = max(
        (n for n in systems if n != "memchentic"),
        key=lambda n: systems[n]["overall"]["recall@10"],
        default=None,
    )
    lines.append(_row("system", [*METRICS, "ms/query"]))
    for name, s in systems.items():
        o = s["overall"]
        lines.append(_row(name, [f"{o[m]:.3f}" for m in METRICS] + [f"{s['ms_per_query']:.1f}"]))
    if best_base and "memchentic" in systems:
        a, b = systems["memchentic"]["overall"], systems[best_base]["overall"]
        lines.append(
            _row(
                f"ratio vs {best_base}"[:22],
                [f"{a[m] / b[m]:.2f}" if b[m] else "-" for m in METRICS],
            )
        )
    lines += cli.context_lines(report, _row)
    lines += ["", "recall@10 by category (n questions)"]
    cats = sorted({c for s in systems.values() for c in s["by_category"]}, key=int)
    lines.append(
        _row("system", [f"{c} {CATEGORIES.get(int(c), '')[:7]}" for c in cats] + ["overall"])
    )
    for name, s in systems.items():
        cells = [f"{s['by_category'][c]['recall@10']:.3f}" for c in cats]
        lines.append(_row(name, cells + [f"{s['overall']['recall@10']:.3f}"]))
    ns = next(iter(systems.values()))["by_category"] if systems else {}
    lines.append(_row("n", [str(ns[c]["n"]) for c in cats] + [str(report["questions"])]))
    if report.get("ablations"):
        lines += ["", "ablations (each changes one setting from the defaults)"]
        lines.append(_row("variant", [*METRICS, "Δ r@10"], width=42))
        ref = systems.get("memchentic", {}).get("overall", {}).get("recall@10", 0.0)
        for name, s in report["ablations"].items():
            o = s["overall"]
            lines.append(
                _row(name, [f"{o[m]:.3f}" for m in METRICS] + [f"{o['recall@10'] - ref:+.3f}"],
                     width=42)
            )  # fmt: skip
    return "\n".join(lines)


public = cli.public  # the report without internal fields (for --json)
