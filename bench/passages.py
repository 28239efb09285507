"""Would matching a memory by its best passage find more? (issue 33, item 2, phase 1)

MiniLM reads at most 256 word pieces (254 of text between its two special tokens);
a longer text is embedded from its head only. The idea: a long memory also gets a
vector per *passage* (consecutive sentences that fit the window) and is scored by
max(whole-text cosine, best passage cosine). Before any engine change this
measures whether that pays, on both dev sets:

* **dense**: every turn of a haystack ranked by cosine to the question alone, as
  the ``dense`` baseline does: (a) the whole-text vector; (b) max(whole, best
  passage); and, for reference, (c) the best passage alone for the long turns,
  (d) the mean of the whole-text and best-passage cosines and (e) max(whole, best
  passage - m) for the margins :data:`MARGINS`;
* **fused** (``--fused``): memchentic's whole search through the public logging
  path, and again with (b) (and (e) at the first margin, :data:`FUSED`)
  substituted for the whole-text cosine everywhere the pipeline reads one (a
  harness-only hook: the store's vector search and the pipeline's cosines), each
  on a fresh copy of the store, so the gain through the ranking is known.

Only turns whose text is over ``--threshold`` word pieces get passages (default:
the window, i.e. exactly the turns the model truncates). Passages: the text split
after sentence ends (``.!?`` then space) and at line breaks, sentences grouped
greedily while they fit ``--window`` word pieces (the embedder's own tokenizer
counts), a sentence longer than the window cut at word-piece boundaries. Their
vectors are cached by text hash in the same file as every benchmark's
(``bench/harness/cache.py``), so a second run embeds nothing again.

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 python bench/passages.py --max-questions 20
    python bench/passages.py --max-questions 80 --fused --locomo ../shared/data/locomo
    python bench/passages.py --window 126 --threshold 126   # MiniLM's training length
"""

from __future__ import annotations

import argparse
import bisect
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import locomo as lc  # noqa: E402
from bench.harness import longmemeval as lme  # noqa: E402
from bench.harness.cache import DEFAULT_PATH, DiskCachedEmbedder  # noqa: E402
from bench.harness.ingest import Entry, copy_store, warm  # noqa: E402
from bench.harness.ingest import ingest as log_turns  # noqa: E402
from memchentic import Embedder, Memory  # noqa: E402
from memchentic.embed import HashEmbedder  # noqa: E402
from memchentic.embed.local import LocalEmbedder, bundled_model_path  # noqa: E402
from memchentic.retrieval import pipeline  # noqa: E402
from memchentic.settings import load_settings  # noqa: E402
from memchentic.write.words import embedding_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LME_DATA = ROOT.parent / "shared" / "data" / "longmemeval" / "dev.json.gz"
LOCOMO_DATA = ROOT.parent / "shared" / "data" / "locomo"
#: MiniLM's 256 word pieces less [CLS] and [SEP].
WINDOW = 254
KS = (1, 5, 10)
#: (a) .. (d) of the module docstring.
DENSE = ("whole", "max(whole, passage)", "passage only", "mean(whole, passage)")
#: (e): a passage counts only by how much it beats the whole text by more than this
#: margin, which offsets the edge a long text gets from having several draws.
MARGINS = (0.05, 0.1)
#: The scores substituted in memchentic's search (``--fused``).
FUSED = (DENSE[1], f"max(whole, passage - {MARGINS[0]:.2f})")

# A sentence ends after . ! or ? (and closing quotes or brackets) before a space,
# or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\s*\n\s*")


# --- passages -----------------------------------------------------------------------
class Splitter:
    """Cuts a text into passages of at most ``window`` word pieces of the model's
    tokenizer (a ``tokenizers.Tokenizer``), sentence by sentence."""

    def __init__(self, tokenizer: Any, window: int) -> None:
        self.tokenizer = tokenizer
        self.window = window

    def count(self, texts: Sequence[str]) -> list[int]:
        """Word pieces of each text, without the special tokens."""
        return [
            len(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ]

    def split(self, text: str) -> list[str]:
        """The passages of ``text`` (one, the text, when it fits the window)."""
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        starts = [a for a, _ in enc.offsets]
        if len(starts) <= self.window:
            return [text]
        # Sentence boundaries as character positions, then as token positions.
        cuts = [m.end() for m in _SENTENCE_END.finditer(text) if 0 < m.end() < len(text)]
        bounds = sorted({0, *(bisect.bisect_left(starts, c) for c in cuts), len(starts)})
        spans: list[tuple[int, int]] = []  # token ranges of the passages
        begin = bounds[0]
        for prev, end in zip(bounds, bounds[1:], strict=False):
            if end - begin <= self.window:
                continue  # the sentence ending at ``end`` still fits
            if prev > begin:
                spans.append((begin, prev))
                begin = prev
            while end - begin > self.window:  # one sentence longer than the window
                spans.append((begin, begin + self.window))
                begin += self.window
        spans.append((begin, len(starts)))
        ends = [b for _, b in enc.offsets]
        out = [text[starts[a] : ends[b - 1]].strip() for a, b in spans if b > a]
        return [p for p in out if p]


def load_splitter(window: int) -> Splitter:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return Splitter(tokenizer, window)


@dataclass(slots=True)
class Passages:
    """Passage vectors of one haystack: ``matrix`` rows belong to turn ``owner[i]``."""

    owner: np.ndarray
    matrix: np.ndarray
    long_turns: int

    def best(self, scores: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Each turn's best passage cosine (-inf for turns without passages)."""
        out = np.full(len(scores), -np.inf, dtype=np.float32)
        if len(self.owner):
            np.maximum.at(out, self.owner, self.matrix @ query)
        return out


def passages_of(
    texts: Sequence[str], splitter: Splitter, threshold: int, emb: Embedder
) -> Passages:
    """The passages of the texts over ``threshold`` word pieces, embedded."""
    counts = splitter.count(texts)
    owner: list[int] = []
    pieces: list[str] = []
    long_turns = 0
    for i, (text, n) in enumerate(zip(texts, counts, strict=True)):
        if n <= threshold:
            continue
        long_turns += 1
        for piece in splitter.split(text):
            owner.append(i)
            pieces.append(piece)
    matrix = emb.embed_batch(pieces) if pieces else np.zeros((0, emb.dimension), np.float32)
    return Passages(np.asarray(owner, dtype=np.int64), np.asarray(matrix, np.float32), long_turns)


def dense_scores(whole: np.ndarray, passages: Passages, query: np.ndarray) -> dict[str, np.ndarray]:
    """Each turn's score under (a) .. (e)."""
    a = whole @ query
    best = passages.best(a, query)
    has = np.isfinite(best)
    return {
        DENSE[0]: a,
        DENSE[1]: np.where(has, np.maximum(a, best), a),
        DENSE[2]: np.where(has, best, a),
        DENSE[3]: np.where(has, (a + best) / 2, a),
    } | {
        f"max(whole, passage - {m:.2f})": np.where(has, np.maximum(a, best - m), a) for m in MARGINS
    }


def top(scores: np.ndarray, k: int) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


# --- the fused hook -----------------------------------------------------------------
@contextmanager
def passage_cosines(
    mem: Memory, ids: Sequence[str], whole: np.ndarray, passages: Passages, variant: str
) -> Iterator[None]:
    """Inside, ``mem``'s searches see the ``variant`` score of :func:`dense_scores`
    (e.g. max(whole, best passage)) as each memory's cosine: the store's vector
    search ranks every memory by it (exactly; the benchmark's single namespace
    needs no filter) and the pipeline's cosines of the candidates are replaced by
    it. Harness-only: the engine is unchanged."""
    position = {memory_id: i for i, memory_id in enumerate(ids)}

    def scores(vector: np.ndarray) -> np.ndarray:
        query = np.asarray(vector, dtype=np.float32)
        return dense_scores(whole, passages, query)[variant]

    def vector_search(
        vector: np.ndarray, k: int, flt: Any, rows: Any = None
    ) -> list[tuple[str, float]]:
        s = scores(vector)
        return [(ids[i], float(s[i])) for i in top(s, k)]

    original = pipeline._true_cosines

    def true_cosines(
        store: Any, req: Any, stages: Any, wanted: list[str], rows: Any = None
    ) -> dict[str, float]:
        found = original(store, req, stages, wanted, rows)
        s = scores(req.vector)
        return {i: float(s[position[i]]) if i in position else c for i, c in found.items()}

    store: Any = mem.store
    store.vector_search = vector_search
    pipeline._true_cosines = true_cosines  # type: ignore[assignment]
    try:
        yield
    finally:
        pipeline._true_cosines = original  # type: ignore[assignment]
        del store.vector_search


# --- the two data sets --------------------------------------------------------------
@dataclass
class Tally:
    """Per-variant metric rows, and what the passages cost."""

    rows: dict[str, list[tuple[str, dict[str, float]]]]  # variant -> (group, metrics)
    turns: int = 0
    long_turns: int = 0
    passages: int = 0
    evidence: int = 0
    long_evidence: int = 0
    #: Evidence turns whose dense rank (b) made better, worse or left alone
    #: against (a), for the turns with passages ("long") and without ("short").
    moved: dict[str, list[int]] = field(
        default_factory=lambda: {"long": [0, 0, 0], "short": [0, 0, 0]}
    )

    def add(self, name: str, metrics: Mapping[str, float], group: str = "") -> None:
        self.rows.setdefault(name, []).append((group, dict(metrics)))

    def count(self, passages: Passages, turns: int, evidence: Sequence[int]) -> None:
        self.turns += turns
        self.long_turns += passages.long_turns
        self.passages += len(passages.owner)
        owners = set(passages.owner.tolist())
        self.evidence += len(evidence)
        self.long_evidence += sum(1 for i in evidence if i in owners)

    def move(
        self, scores: Mapping[str, np.ndarray], evidence: Sequence[int], long: set[int]
    ) -> None:
        """Tally how (b) moved each evidence turn's dense rank against (a)."""
        before, after = scores[DENSE[0]], scores[DENSE[1]]
        for i in evidence:
            was = int((before > before[i]).sum())
            now = int((after > after[i]).sum())
            self.moved["long" if i in long else "short"][(now > was) + 2 * (now == was)] += 1


def _lme_metrics(ranked: Sequence[str], q: lme.Question, long: set[str]) -> dict[str, float]:
    """Turn recall@k and MRR, and ``long@10``: the share of the first ten turns
    that have passages (what passages do to the top when they do not help)."""
    m = lme.question_metrics(ranked, q.evidence, q.answer_sessions)
    share = sum(1 for key in ranked[:10] if key in long) / max(len(ranked[:10]), 1)
    return {f"r@{k}": m[f"turn_recall@{k}"] for k in KS} | {"mrr": m["mrr"], "long@10": share}


def run_longmemeval(
    data: Path, emb: Embedder, splitter: Splitter, threshold: int, *,
    max_questions: int | None, fused: bool, progress: Callable[[str], None],
) -> Tally:  # fmt: skip
    questions, _ = lme.load(data, max_questions=max_questions)
    tally = Tally({})
    settings = load_settings()
    settings = settings.model_copy(update={"max_content_bytes": lme.CONTENT_BYTES})
    t0 = time.perf_counter()
    for n, q in enumerate(questions, start=1):
        texts = [embedding_text(e.content) for e in q.entries]
        whole = emb.embed_batch(texts)
        query = emb.embed_batch([embedding_text(q.question)])[0]
        passages = passages_of(texts, splitter, threshold, emb)
        evidence = [i for i, k in enumerate(q.keys) if k in q.evidence]
        tally.count(passages, len(texts), evidence)
        group = lme.TYPE_SHORT.get(q.type, q.type)
        long = {q.keys[i] for i in passages.owner.tolist()}
        scores = dense_scores(whole, passages, query)
        tally.move(scores, evidence, set(passages.owner.tolist()))
        for name, s in scores.items():
            ranked = [q.keys[i] for i in top(s, lme.LIMIT)]
            tally.add(f"dense {name}", _lme_metrics(ranked, q, long), group)
        if fused:
            for name, ranked in _fused_lme(q, emb, whole, passages, settings).items():
                tally.add(name, _lme_metrics(ranked, q, long), group)
        progress(f"longmemeval {n}/{len(questions)}: {passages.long_turns} long turns, "
                 f"{len(passages.owner)} passages, {time.perf_counter() - t0:.0f} s")  # fmt: skip
    return tally


def _fused_lme(
    q: lme.Question, emb: Embedder, whole: np.ndarray, passages: Passages, settings: Any
) -> dict[str, list[str]]:
    warm(emb, q.entries)
    out: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="passages-") as tmp:
        path = Path(tmp) / "m.db"
        with Memory(path=path, embedder=emb, settings=settings) as mem:
            ids = log_turns(mem, q.entries, user_id="u")
        key_of = dict(zip(ids, q.keys, strict=True))
        for name, mem in _searchers(path, emb, settings, ids, whole, passages):
            hits = mem.search(q.question, user_id="u", limit=lme.LIMIT, now=q.date)
            out[name] = [key_of[h.memory.id] for h in hits]
    return out


def _searchers(
    path: Path, emb: Embedder, settings: Any, ids: Sequence[str], whole: np.ndarray,
    passages: Passages | None,
) -> Iterator[tuple[str, Memory]]:  # fmt: skip
    """For memchentic's search as it is, then with each of :data:`FUSED`'s scores
    substituted: a ``Memory`` on a fresh copy of the store at ``path`` (no variant
    sees the recalls another counted). Without passages the substituted searches
    are the plain one."""
    for variant in (None, *FUSED):
        name = f"memchentic {variant or DENSE[0]}"
        copy = copy_store(path, path.parent / f"v{FUSED.index(variant) if variant else 'w'}")
        with Memory(path=copy, embedder=emb, settings=settings) as mem:
            if variant is None or passages is None:
                yield name, mem
            else:
                with passage_cosines(mem, ids, whole, passages, variant):
                    yield name, mem


def _locomo_metrics(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    m = lc.question_metrics(ranked, evidence)
    return {f"r@{k}": m[f"recall@{k}"] for k in KS} | {"mrr": m["mrr"]}


def run_locomo(
    data: Path, emb: Embedder, splitter: Splitter, threshold: int, *,
    fused: bool, progress: Callable[[str], None],
) -> Tally:  # fmt: skip
    tally = Tally({})
    settings = load_settings()
    for conv in lc.load(data):
        texts = [embedding_text(t.content) for t in conv.turns]
        dia = [t.dia_id for t in conv.turns]
        whole = emb.embed_batch(texts)
        queries = emb.embed_batch([embedding_text(q.question) for q in conv.questions])
        passages = passages_of(texts, splitter, threshold, emb)
        ev_all = {d for q in conv.questions for d in q.evidence}
        tally.count(passages, len(texts), [i for i, d in enumerate(dia) if d in ev_all])
        for q, qv in zip(conv.questions, queries, strict=True):
            for name, s in dense_scores(whole, passages, qv).items():
                ranked = [dia[i] for i in top(s, lc.LIMIT)]
                tally.add(f"dense {name}", _locomo_metrics(ranked, q.evidence))
        if fused:  # without passages the substituted search is the whole-text one
            some = passages if len(passages.owner) else None
            for name, rows in _fused_locomo(conv, emb, whole, some, settings).items():
                for metrics in rows:
                    tally.add(name, metrics)
        progress(f"locomo conv-{conv.id}: {passages.long_turns} long turns of {len(texts)}")
    return tally


def _fused_locomo(
    conv: lc.Conversation, emb: Embedder, whole: np.ndarray, passages: Passages | None,
    settings: Any,
) -> dict[str, list[dict[str, float]]]:  # fmt: skip
    entries = [Entry(t.content, f"session-{t.session}", t.when,
                     {"speaker": t.speaker, "dia_id": t.dia_id}) for t in conv.turns]  # fmt: skip
    warm(emb, entries)
    out: dict[str, list[dict[str, float]]] = {}
    user = f"conv-{conv.id}"
    with tempfile.TemporaryDirectory(prefix="passages-") as tmp:
        path = Path(tmp) / "m.db"
        with Memory(path=path, embedder=emb, settings=settings) as mem:
            ids = log_turns(mem, entries, user_id=user)
        dia_of = {i: t.dia_id for i, t in zip(ids, conv.turns, strict=True)}
        for name, mem in _searchers(path, emb, settings, ids, whole, passages):
            for q in conv.questions:
                hits = mem.search(q.question, user_id=user, limit=lc.LIMIT, now=conv.end)
                ranked = [dia_of.get(h.memory.id, "") for h in hits]
                out.setdefault(name, []).append(_locomo_metrics(ranked, q.evidence))
    return out


# --- report -------------------------------------------------------------------------
def format_tally(title: str, tally: Tally) -> str:
    cols = [*(f"r@{k}" for k in KS), "mrr"]
    if all("long@10" in m for rows in tally.rows.values() for _, m in rows):
        cols.append("long@10")
    lines = [
        f"{title}: {len(next(iter(tally.rows.values()), []))} questions, {tally.turns} turns, "
        f"{tally.long_turns} over the threshold ({tally.long_turns / max(tally.turns, 1):.1%}) "
        f"-> {tally.passages} passages; evidence turns {tally.evidence}, "
        f"{tally.long_evidence} of them long",
        f"{'variant':<40}" + "".join(f"{c:>8}" for c in cols),
    ]
    for name, rows in tally.rows.items():
        means = [float(np.mean([m[c] for _, m in rows])) for c in cols]
        lines.append(f"{name:<40}" + "".join(f"{v:>8.3f}" for v in means))
    if any(sum(counts) for counts in tally.moved.values()):  # LongMemEval
        moved = "; ".join(f"{kind} {b} better, {w} worse, {same} same"
                          for kind, (b, w, same) in tally.moved.items())  # fmt: skip
        lines.append(f"dense rank of the evidence turns, (b) against (a): {moved}")
    groups = sorted({g for rows in tally.rows.values() for g, _ in rows})
    if len(groups) > 1:
        lines += ["", "r@10 by group (n questions)"]
        lines.append(f"{'variant':<40}" + "".join(f"{g[:10]:>11}" for g in groups))
        for name, rows in tally.rows.items():
            cells = [np.mean([m["r@10"] for g2, m in rows if g2 == g]) for g in groups]
            lines.append(f"{name:<40}" + "".join(f"{v:>11.3f}" for v in cells))
        first = next(iter(tally.rows.values()))
        counts = [sum(1 for g2, _ in first if g2 == g) for g in groups]
        lines.append(f"{'n':<40}" + "".join(f"{c:>11}" for c in counts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(LME_DATA), help="LongMemEval JSON (.json.gz)")
    parser.add_argument("--locomo", help="also LoCoMo: the folder of conv-*.json")
    parser.add_argument("--no-longmemeval", action="store_true")
    parser.add_argument("--max-questions", type=int, help="LongMemEval questions, spread")
    parser.add_argument("--window", type=int, default=WINDOW, help="word pieces a passage")
    parser.add_argument("--threshold", type=int, help="passages above this many word pieces "
                        "(default: the window)")  # fmt: skip
    parser.add_argument("--fused", action="store_true", help="also memchentic's whole search")
    parser.add_argument("--embedder", choices=["local", "hash"], default="local",
                        help="hash: only to try the script (not semantic)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads (local)")
    parser.add_argument("--cache", default=str(DEFAULT_PATH), help="the vector cache file")
    args = parser.parse_args(argv)
    threshold = args.threshold if args.threshold is not None else args.window
    splitter = load_splitter(args.window)
    inner = LocalEmbedder(threads=args.threads) if args.embedder == "local" else HashEmbedder()
    emb = DiskCachedEmbedder(inner, args.cache)

    def progress(line: str) -> None:
        print(f"{line}; {emb.computed} embedded", file=sys.stderr, flush=True)

    head = f"window {args.window} word pieces, threshold {threshold}"
    try:
        if not args.no_longmemeval:
            tally = run_longmemeval(Path(args.data), emb, splitter, threshold,
                                    max_questions=args.max_questions, fused=args.fused,
                                    progress=progress)  # fmt: skip
            print(format_tally(f"LongMemEval ({head})", tally), flush=True)
        if args.locomo:
            tally = run_locomo(Path(args.locomo), emb, splitter, threshold, fused=args.fused,
                               progress=progress)  # fmt: skip
            print(format_tally(f"LoCoMo ({head})", tally), flush=True)
    finally:
        emb.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
