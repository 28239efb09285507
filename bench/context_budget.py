"""What reaches the prompt (issue 33, item 3): evidence inside ``context(question,
budget_tokens=B)`` on both dev sets, next to recall@k of search on the same stores.

Usage (from the repository root, after ``pip install -e '.[local,dev]'``)::

    HF_HUB_OFFLINE=1 python bench/context_budget.py --locomo ../shared/data/locomo \\
        --longmemeval ../shared/data/longmemeval/dev.json.gz
    python bench/context_budget.py --locomo DIR --variants      # also each ablation row
    python bench/context_budget.py --longmemeval FILE --max-questions 24 --json out.json

The stores are the harness's (``bench/harness/``: one ``Memory.add`` per turn with
its session id, vectors cached in ``bench/results/embeddings.sqlite``). Every
variant asks on its own copy of the freshly logged store (contexts and searches
count recalls), the same calls in the same order: one ``search(question,
limit=20)`` for recall@k, then one ``context(question, budget_tokens=B)`` per B.

Per question and budget B (evidence E: the memories of the evidence turns):

- ``context@B``: |E ∩ memories shown| / |E| (the recall of recall@k, of the block);
  a memory is shown when an item of the block carries its id (an excerpt does:
  it names its memory, which the agent can fetch whole);
- ``complete@B``: 1 when every evidence memory is shown;
- ``answer@B``: 1 when the gold answer's words are in the rendered block, over the
  questions whose answer is written in one of their evidence turns (so an excerpt
  that cut the answer away counts as a miss);
- ``tokens@B``: tokens of the block (``ctx.tokens``); ``memories@B``: distinct
  memories shown; ``excerpts@B``: items shown as an excerpt.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import locomo, longmemeval  # noqa: E402
from bench.harness.cache import DEFAULT_PATH, DiskCachedEmbedder  # noqa: E402
from bench.harness.ingest import Entry, copy_store, warm  # noqa: E402
from bench.harness.ingest import ingest as log_turns  # noqa: E402
from memchentic import Embedder, Memory, Settings  # noqa: E402
from memchentic.embed import get_embedder  # noqa: E402
from memchentic.settings import load_settings  # noqa: E402

BUDGETS = (500, 1000, 2000)
KS = (1, 5, 10)
LIMIT = 20
#: The context rules of issue 33 item 3, each switched from the defaults alone
#: (``--variants``); docs/retrieval-quality.md has the rows on both sets.
VARIANTS: dict[str, dict[str, Any]] = {
    "before: all three off": {
        "context_excerpt_over_chars": 0,
        "context_duplicate_cosine": 0.0,
        "context_fill_tokens_per_hit": 0,
    },
    "excerpts off (OVER_CHARS=0)": {"context_excerpt_over_chars": 0},
    "excerpts over 800 chars": {"context_excerpt_over_chars": 800},
    "excerpts over 2000 chars": {"context_excerpt_over_chars": 2000},
    "excerpt of 300 chars": {"context_excerpt_chars": 300},
    "excerpt of 600 chars": {"context_excerpt_chars": 600},
    "excerpt of 1000 chars": {"context_excerpt_chars": 1000},
    "near-duplicates on, cosine 0.95": {"context_duplicate_cosine": 0.95},
    "near-duplicates on, cosine 0.9": {"context_duplicate_cosine": 0.9},
    "near-duplicates on, cosine 0.85": {"context_duplicate_cosine": 0.85},
    "fill on, 40 tokens a hit": {"context_fill_tokens_per_hit": 40},
    "fill on, 25 tokens a hit": {"context_fill_tokens_per_hit": 25},
}


@dataclass(frozen=True, slots=True)
class Ask:
    """One question: its text, its evidence memories, when it is asked, its answer."""

    question: str
    evidence: frozenset[str]
    now: datetime
    answer: str | None = None  # only when the answer is written in an evidence turn
    group: str = ""


@dataclass(slots=True)
class Store:
    """A freshly logged store and the questions asked of it."""

    name: str
    path: Path
    user_id: str
    asks: list[Ask]


# --- the answer check -------------------------------------------------------------------
def _norm(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def answer_in(answer: str, text: str) -> bool:
    """Whether ``answer``'s words appear, in order and whole, in ``text``."""
    want = _norm(answer)
    return bool(want) and f" {want} " in f" {_norm(text)} "


def checkable(answer: object, evidence_texts: Sequence[str]) -> str | None:
    """The answer when it is short text written in an evidence turn (at least three
    characters, so a bare digit is not found everywhere), else None."""
    text = str(answer).strip() if answer is not None else ""
    if len(_norm(text)) < 3 or len(text) > 80:
        return None
    return text if any(answer_in(text, t) for t in evidence_texts) else None


# --- the two data sets ------------------------------------------------------------------
def _log(entries: Sequence[Entry], path: Path, emb: Embedder, settings: Settings, user: str
         ) -> list[str]:  # fmt: skip
    warm(emb, entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    with Memory(path=path, embedder=emb, settings=settings) as mem:
        return log_turns(mem, entries, user_id=user)


def locomo_stores(data: Path, emb: Embedder, settings: Settings, root: Path,
                  max_questions: int | None = None) -> Iterator[Store]:  # fmt: skip
    """One store per conversation of the LoCoMo split."""
    for conv in locomo.load(data):
        raw = json.loads((data / f"conv-{conv.id}.json").read_text(encoding="utf-8"))
        answers = {str(q["question"]): q.get("answer") for q in raw.get("qa", [])}
        entries = [
            Entry(
                t.content,
                f"session-{t.session}",
                t.when,
                {"speaker": t.speaker, "dia_id": t.dia_id},
            )
            for t in conv.turns
        ]
        path = root / f"locomo-{conv.id}" / "snapshot" / "memory.db"
        ids = _log(entries, path, emb, settings, f"conv-{conv.id}")
        id_of = {t.dia_id: i for i, t in zip(ids, conv.turns, strict=True)}
        text_of = {t.dia_id: t.content for t in conv.turns}
        asks = []
        for q in conv.questions[:max_questions]:
            ans = checkable(answers.get(q.question), [text_of[d] for d in q.evidence])
            asks.append(Ask(q.question, frozenset(id_of[d] for d in q.evidence), conv.end, ans,
                            locomo.CATEGORIES.get(q.category, str(q.category))))  # fmt: skip
        yield Store(f"locomo-{conv.id}", path, f"conv-{conv.id}", asks)


def longmemeval_stores(data: Path, emb: Embedder, settings: Settings, root: Path,
                       max_questions: int | None = None) -> Iterator[Store]:  # fmt: skip
    """One store per question of the LongMemEval file (abstentions left out)."""
    items = [it for it in longmemeval.read(data) if not str(it["question_id"]).endswith("_abs")]
    if max_questions is not None:
        items = list(longmemeval.spread(items, max_questions))
    for item in items:
        q = longmemeval.question_of(item)
        if not q.evidence:
            continue
        path = root / f"lme-{q.id}" / "snapshot" / "memory.db"
        ids = _log(q.entries, path, emb, settings, "u")
        ev = [i for i, key in zip(ids, q.keys, strict=True) if key in q.evidence]
        texts = [e.content for e, key in zip(q.entries, q.keys, strict=True) if key in q.evidence]
        ans = checkable(item.get("answer"), texts)
        yield Store(f"lme-{q.id}", path, "u", [Ask(q.question, frozenset(ev), q.date, ans, q.type)])


# --- asking -------------------------------------------------------------------------------
def ask(mem: Memory, store: Store, a: Ask, budgets: Sequence[int]) -> dict[str, float]:
    """The metrics of one question (see the module's docstring)."""
    hits = mem.search(a.question, user_id=store.user_id, limit=LIMIT, now=a.now)
    ranked = [h.memory.id for h in hits]
    out = {f"recall@{k}": len(a.evidence.intersection(ranked[:k])) / len(a.evidence) for k in KS}
    for b in budgets:
        ctx = mem.context(a.question, user_id=store.user_id, budget_tokens=b, now=a.now)
        shown = set(ctx.memory_ids)
        found = len(a.evidence & shown)
        out[f"context@{b}"] = found / len(a.evidence)
        out[f"complete@{b}"] = float(found == len(a.evidence))
        if a.answer is not None:
            out[f"answer@{b}"] = float(answer_in(a.answer, str(ctx)))
        out[f"tokens@{b}"] = float(ctx.tokens)
        out[f"memories@{b}"] = float(len(shown))
        out[f"excerpts@{b}"] = float(sum(1 for i in ctx.items if getattr(i, "excerpt", False)))
    return out


def run(
    stores: Iterator[Store],
    emb: Embedder,
    variants: Mapping[str, Settings],
    budgets: Sequence[int] = BUDGETS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every variant's means over the questions of ``stores`` (each store removed after)."""
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    seconds = dict.fromkeys(variants, 0.0)
    for store in stores:
        for name, settings in variants.items():
            copy = copy_store(store.path, store.path.parent.parent / name.replace("/", "_")[:40])
            start = time.perf_counter()
            with Memory(path=copy, embedder=emb, settings=settings) as mem:
                rows[name] += [ask(mem, store, a, budgets) for a in store.asks]
            seconds[name] += time.perf_counter() - start
        shutil.rmtree(store.path.parent.parent, ignore_errors=True)
        if progress:
            progress(f"{store.name}: {len(store.asks)} questions")
    return {name: summarise(r, seconds[name]) for name, r in rows.items()}


def summarise(rows: Sequence[Mapping[str, float]], seconds: float = 0.0) -> dict[str, Any]:
    """Means of each metric over the rows that hold it, with ``n`` and ``n_answer``."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    out: dict[str, Any] = {}
    for k in keys:
        values = [r[k] for r in rows if k in r]
        out[k] = sum(values) / len(values) if values else 0.0
    out["n"] = len(rows)
    out["n_answer"] = sum(1 for r in rows if any(k.startswith("answer@") for k in r))
    out["s_per_question"] = round(seconds / max(len(rows), 1), 4)
    return out


# --- printing -------------------------------------------------------------------------------
def table(name: str, results: Mapping[str, Mapping[str, Any]], budgets: Sequence[int]) -> str:
    cols = [f"recall@{k}" for k in KS]
    for what in ("context", "complete", "answer", "tokens", "memories", "excerpts"):
        cols += [f"{what}@{b}" for b in budgets]
    first = next(iter(results.values()))
    lines = [f"{name}: {first['n']} questions ({first['n_answer']} with a checkable answer)",
             "| variant | " + " | ".join(cols) + " | s/question |",
             "| --- " * (len(cols) + 2) + "|"]  # fmt: skip
    for variant, r in results.items():
        cells = [f"{r.get(c, 0.0):.3f}" if not c.startswith(("tokens", "memories", "excerpts"))
                 else f"{r.get(c, 0.0):.1f}" for c in cols]  # fmt: skip
        lines.append(f"| {variant} | " + " | ".join(cells) + f" | {r['s_per_question']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, help="folder of conv-*.json files")
    parser.add_argument("--longmemeval", type=Path, help="LongMemEval file (.json or .json.gz)")
    parser.add_argument("--max-questions", type=int, help="LoCoMo: per conversation; "
                        "LongMemEval: in all, spread over the types")  # fmt: skip
    parser.add_argument("--variants", action="store_true", help="also every ablation row")
    parser.add_argument("--only", nargs="*", help="only these variants (names from VARIANTS)")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--cache", default=str(DEFAULT_PATH))
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args(argv)
    if not args.locomo and not args.longmemeval:
        parser.error("give --locomo and/or --longmemeval")
    base = load_settings()
    if base.max_content_bytes < longmemeval.CONTENT_BYTES:
        base = base.model_copy(update={"max_content_bytes": longmemeval.CONTENT_BYTES})
    chosen = dict(VARIANTS) if args.variants else {}
    if args.only:
        chosen = {k: v for k, v in VARIANTS.items() if k in args.only}
    variants = {"defaults": base, **{k: base.model_copy(update=v) for k, v in chosen.items()}}
    emb = DiskCachedEmbedder(get_embedder(args.embedder, base), args.cache)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="context-budget-") as tmp:
        root = Path(tmp)
        if args.locomo:
            stores = locomo_stores(args.locomo, emb, base, root, args.max_questions)
            report["locomo"] = run(stores, emb, variants, BUDGETS, say)
        if args.longmemeval:
            stores = longmemeval_stores(args.longmemeval, emb, base, root, args.max_questions)
            report["longmemeval"] = run(stores, emb, variants, BUDGETS, say)
    emb.close()
    for name, results in report.items():
        print(table(name, results, BUDGETS) + "\n")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
