"""Our own development sets (issue 33, item 4): memchentic's search against the
BM25, dense and RRF baselines on informal chat and on technical sessions.

Usage (from the repository root, after ``pip install -e '.[local,dev]'``)::

    HF_HUB_OFFLINE=1 python bench/own_sets.py                    # both sets
    python bench/own_sets.py --set chat --embedder hash --json out.json
    python bench/own_sets.py --keyword-ablations                  # each keyword rule switched
    python bench/own_sets.py --fuzzy                              # the fuzzy path, simulated

The sets are ``tests/data/chat_set.py`` and ``tests/data/technical_set.py``:
conversations of sessions of turns, and questions with the ids of the turns
that answer them. Each conversation is logged into a fresh store the way an
agent logs (``bench.harness.ingest``, the README's agent recipe): one
``Memory.add`` per turn, text ``"Speaker: text"``, the session's id, the
speaker (and role, where the set has roles) and the turn's id in metadata,
stamped a minute apart from the session's start, kept permanently; each
question is then asked with ``now`` = the conversation's last turn, as the
LoCoMo harness does (``bench.harness.locomo``, whose search and baseline runs
and metrics this reuses: recall@k = |E ∩ R[:k]| / |E|, MRR over the top 20).
Questions are grouped as ``single`` (one evidence turn) or ``multi``.

``--keyword-ablations`` ingests and asks again with each rule of
:data:`memchentic.text.KEYWORD_RULES` switched (on where it is off: none is
active by default), and all on and all off (the rules change what the index
holds, so each variant is logged anew); ``--fuzzy`` asks with the fuzzy keyword
path simulated bench-side (``bench/fuzzy_keywords.py``: each query word that no
memory holds gets the store's index terms spelled nearly like it as extra
keyword words).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.fuzzy_keywords import fuzzy_keyword_search  # noqa: E402
from bench.harness import cli  # noqa: E402
from bench.harness import locomo as lh  # noqa: E402
from bench.harness.cache import DEFAULT_PATH, DiskCachedEmbedder  # noqa: E402
from bench.harness.ingest import Entry, ingest, warm  # noqa: E402
from memchentic import Embedder, Memory, Settings, text  # noqa: E402
from memchentic.embed import get_embedder  # noqa: E402
from memchentic.settings import load_settings  # noqa: E402
from tests.data import chat_set, dialogues, technical_set  # noqa: E402

SETS: dict[str, tuple[dialogues.Conversation, ...]] = {
    "chat": chat_set.CONVERSATIONS,
    "technical": technical_set.CONVERSATIONS,
}
METRICS = ("recall@1", "recall@5", "recall@10", "mrr")
GROUPS = {1: "single", 2: "multi"}
#: The system that asks with the fuzzy keyword path simulated (``--fuzzy``).
FUZZY = "fuzzy keyword path on (simulated)"


def keyword_variants(ablate: bool) -> dict[str, frozenset[str]]:
    """The keyword rules each memchentic system is logged with: the active ones
    (``memchentic``), and with ``ablate`` each rule switched (on if it is off, off
    if it is on), then all on and all off; each set of rules once."""
    active = text.ACTIVE_KEYWORD_RULES
    out = {"memchentic": active}
    if ablate:
        for rule in text.KEYWORD_RULES:
            switched = active ^ {rule}
            out[f"keyword rule {rule} {'on' if rule in switched else 'off'}"] = switched
        out["keyword rules all on"] = frozenset(text.KEYWORD_RULES)
        out["keyword rules all off"] = frozenset()
    kept: dict[str, frozenset[str]] = {}
    for name, rules in out.items():
        if rules not in kept.values():
            kept[name] = rules
    return kept


@contextlib.contextmanager
def keyword_rules(rules: frozenset[str]) -> Iterator[None]:
    """:data:`memchentic.text.ACTIVE_KEYWORD_RULES` set to ``rules`` in the block."""
    saved = text.ACTIVE_KEYWORD_RULES
    text.ACTIVE_KEYWORD_RULES = rules
    try:
        yield
    finally:
        text.ACTIVE_KEYWORD_RULES = saved


def as_locomo(conv: dialogues.Conversation) -> tuple[lh.Conversation, list[Entry]]:
    """``conv`` in the LoCoMo harness's shape (questions grouped by evidence
    count), and the entries an agent logs for it."""
    turns, entries = [], []
    for n, (session, i, (tid, speaker, said)) in enumerate(conv.turns()):
        when = session.at(i)
        turns.append(lh.Turn(tid, speaker, said, conv.sessions.index(session), when))
        meta = {"speaker": speaker, "turn_id": tid, "turn": n}
        if speaker in conv.roles:
            meta["role"] = conv.roles[speaker]
        entries.append(Entry(f"{speaker}: {said}", session.id, when, meta))
    questions = [lh.Question(q.text, 1 if len(q.evidence) == 1 else 2, list(q.evidence))
                 for q in conv.questions]  # fmt: skip
    end = max(t.when for t in turns)
    pair = (conv.speakers[0], conv.speakers[-1])
    return lh.Conversation(conv.id, pair, turns, questions, end), entries


def _log(
    conv: lh.Conversation, entries: list[Entry], path: Path, emb: Embedder, settings: Settings
) -> dict[str, str]:
    """Every turn into a fresh store at ``path``; memory id -> turn id."""
    warm(emb, entries)
    with Memory(path=path, embedder=emb, settings=settings) as mem:
        ids = ingest(mem, entries, user_id=f"conv-{conv.id}")
    return {i: t.dia_id for i, t in zip(ids, conv.turns, strict=True)}


def _baselines(
    conv: lh.Conversation, snap: Path, dia_of: Mapping[str, str], emb: Embedder,
    settings: Settings, runs: dict[str, lh.Run],
) -> None:  # fmt: skip
    with Memory(path=snap, embedder=emb, settings=settings) as mem:
        by_id = mem.store.vectors(list(dia_of))
    order = {t.dia_id: i for i, t in enumerate(conv.turns)}
    matrix = np.zeros((len(conv.turns), emb.dimension), dtype=np.float32)
    for mid, vec in by_id.items():
        matrix[order[dia_of[mid]]] = vec
    lh._baseline_runs(conv, matrix, emb, runs)


def run_set(
    convs: Sequence[dialogues.Conversation],
    emb: Embedder,
    base: Settings,
    *,
    baselines: bool = True,
    keyword_ablations: bool = False,
    fuzzy: bool = False,
    max_questions: int | None = None,
    workdir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """One set's report: each system's metrics overall and by group."""
    runs: dict[str, lh.Run] = {}
    ingest_s = 0.0
    n_turns = n_questions = 0
    with tempfile.TemporaryDirectory(prefix="own-sets-", dir=workdir) as tmp:
        for conv in convs:
            lconv, entries = as_locomo(conv)
            lconv.questions = lconv.questions[:max_questions]
            n_turns, n_questions = n_turns + len(entries), n_questions + len(lconv.questions)
            for name, rules in keyword_variants(keyword_ablations).items():
                root = Path(tmp) / conv.id / name.replace(" ", "_")
                snap = root / "snapshot" / "memory.db"
                snap.parent.mkdir(parents=True)
                with keyword_rules(rules):
                    start = time.perf_counter()
                    dia_of = _log(lconv, entries, snap, emb, base)
                    if name == "memchentic":
                        ingest_s += time.perf_counter() - start
                    run = runs.setdefault(name, lh.Run())
                    lh._search_run(lconv, snap, root / "ask", emb, base, dia_of, None, run)
                    if name == "memchentic" and fuzzy:
                        with fuzzy_keyword_search():
                            lh._search_run(lconv, snap, root / "fuzzy", emb, base, dia_of, None,
                                           runs.setdefault(FUZZY, lh.Run()))  # fmt: skip
                    if name == "memchentic" and baselines:
                        _baselines(lconv, snap, dia_of, emb, base, runs)
            if progress:
                progress(f"{conv.id}: {len(entries)} turns, {len(lconv.questions)} questions")
    systems = {}
    for name, r in runs.items():
        overall, by_group = cli.group_means(r.rows, METRICS)
        systems[name] = {
            "overall": overall,
            "by_group": {GROUPS[int(g)]: v for g, v in by_group.items()},
            "ms_per_query": round(1000 * r.seconds / max(r.queries, 1), 2),
        }
    return {"turns": n_turns, "questions": n_questions, "ingest_s": round(ingest_s, 3),
            "systems": systems}  # fmt: skip


def run_benchmark(
    sets: Sequence[str] = tuple(SETS),
    *,
    embedder: str | Embedder = "local",
    settings: Settings | None = None,
    cache: str | Path | None = DEFAULT_PATH,
    **options: Any,
) -> dict[str, Any]:
    """Every named set's report (:func:`run_set`), with the embedder used."""
    base = settings or load_settings()
    inner = embedder if isinstance(embedder, Embedder) else get_embedder(embedder, base)
    emb = DiskCachedEmbedder(inner, cache)
    try:
        reports = {name: run_set(SETS[name], emb, base, **options) for name in sets}
    finally:
        emb.close()
    return {"embedder": emb.model, "keyword_rules": sorted(text.ACTIVE_KEYWORD_RULES),
            "embedded": emb.computed, "sets": reports}  # fmt: skip


def format_report(report: Mapping[str, Any]) -> str:
    """The tables: each set's systems by recall@1/5/10 and MRR, then by group."""
    lines = [f"embedder {report['embedder']}; keyword rules "
             f"{', '.join(report['keyword_rules']) or 'none'}"]  # fmt: skip
    for name, rep in report["sets"].items():
        lines += ["", f"{name}: {rep['questions']} questions, {rep['turns']} turns"]
        lines.append(f"{'system':<36}" + "".join(f"{m:>10}" for m in METRICS)
                     + "".join(f"{'r@10 ' + g:>13}" for g in GROUPS.values()))  # fmt: skip
        for sys_name, s in rep["systems"].items():
            o, g = s["overall"], s["by_group"]
            lines.append(f"{sys_name[:36]:<36}" + "".join(f"{o[m]:>10.3f}" for m in METRICS)
                         + "".join(f"{g[k]['recall@10'] if k in g else 0:>13.3f}"
                                   for k in GROUPS.values()))  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=[*SETS, "both"], default="both")
    parser.add_argument("--embedder", default="local", help="local (default) or hash")
    parser.add_argument("--no-baselines", action="store_true", help="skip the baselines")
    parser.add_argument("--keyword-ablations", action="store_true",
                        help="also log and ask with each keyword rule switched")  # fmt: skip
    parser.add_argument("--fuzzy", action="store_true",
                        help="also ask with the fuzzy keyword path simulated")  # fmt: skip
    parser.add_argument("--max-questions", type=int, help="at most this many per conversation")
    parser.add_argument("--cache", default=str(DEFAULT_PATH), help="SQLite file of cached vectors")
    parser.add_argument("--workdir", help="folder for the stores (default: a temporary one)")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    args = parser.parse_args(argv)
    report = run_benchmark(
        tuple(SETS) if args.set == "both" else (args.set,),
        embedder=args.embedder, cache=args.cache, baselines=not args.no_baselines,
        keyword_ablations=args.keyword_ablations, fuzzy=args.fuzzy,
        max_questions=args.max_questions, workdir=args.workdir,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )  # fmt: skip
    print(format_report(report))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
