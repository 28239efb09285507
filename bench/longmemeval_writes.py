"""Write-time truth on LongMemEval (issue 21): every turn logged, none hidden.

Each question's haystack is logged the way an agent logs turns: one ``add`` per
turn, text ``"user: ..."`` / ``"assistant: ..."`` (role also in metadata), the
session's id, ``type="episodic"`` with ``on_duplicate="keep"``, each turn stamped
a minute after the previous one from its session's date. Then the question is
asked with ``now=`` its date. Printed:

- how many turns were refused or superseded at write time (the target is 0), how
  many evidence turns are hidden by that, and how many have expired by the
  question's date (the default 90-day lifetime: a question asked long after);
  (A few haystack turns are longer than ``MAX_CONTENT_BYTES``' 64 KiB; the
  run raises it to 1 MiB.)
- on knowledge-update questions whose evidence spans two or more sessions,
  whether the newest evidence turn ranks above every older one, and turn
  recall@10.

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 python bench/longmemeval_writes.py \
        --data ../shared/data/longmemeval/dev.json.gz
    python bench/longmemeval_writes.py --data FILE --types knowledge-update --embedder hash

Vectors are cached on disk by text hash (``--cache``, default
``bench/results/embeddings.sqlite``; ``bench.harness.cache``), so a second run
embeds nothing again. The retrieval figures of LongMemEval come from
``bench/longmemeval.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness.cache import DEFAULT_PATH, DiskCachedEmbedder  # noqa: E402
from bench.harness.longmemeval import parse_date, read  # noqa: E402
from memchentic import Embedder, Memory, Settings  # noqa: E402
from memchentic.embed import get_embedder  # noqa: E402
from memchentic.write.statements import embedding_text  # noqa: E402


def run(items: list[dict[str, Any]], embedder: Embedder, progress: Any) -> dict[str, Any]:
    statuses: Counter[str] = Counter()
    hidden_evidence = expired_evidence = 0
    ku_rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for n, item in enumerate(items, 1):
        with (
            tempfile.TemporaryDirectory() as tmp,
            Memory(
                path=Path(tmp) / "m.db",
                embedder=embedder,
                settings=Settings(max_content_bytes=1 << 20),
            ) as mem,
        ):
            # embed the haystack once (cached), then log it turn by turn
            texts = [
                f"{t['role']}: {t['content']}"
                for session in item["haystack_sessions"]
                for t in session
            ]
            embedder.embed_batch([embedding_text(t) for t in texts])
            evidence: dict[str, datetime] = {}
            for sid, date, session in zip(
                item["haystack_session_ids"],
                item["haystack_dates"],
                item["haystack_sessions"],
                strict=True,
            ):
                at = parse_date(date)
                for i, turn in enumerate(session):
                    result = mem.add(
                        f"{turn['role']}: {turn['content']}", type="episodic",
                        on_duplicate="keep", session_id=sid, user_id="u",
                        metadata={"role": turn["role"]}, created_at=at + timedelta(minutes=i),
                        now=at + timedelta(minutes=i),
                    )  # fmt: skip
                    statuses[result.status] += 1
                    if turn.get("has_answer") and result.id:
                        evidence[result.id] = at
            asked = parse_date(item["question_date"])
            rows = mem.list(user_id="u", limit=1000, include_expired=True, now=asked)
            live = {r.id for r in rows if r.superseded_by is None}
            hidden_evidence += sum(1 for i in evidence if i not in live)
            expired_evidence += sum(1 for r in rows if r.id in evidence and r.is_expired(asked))
            if item["question_type"] != "knowledge-update" or len(set(evidence.values())) < 2:
                continue
            hits = mem.search(item["question"], user_id="u", limit=100, now=asked)
            rank = {h.id: r for r, h in enumerate(hits)}
            newest = max(evidence.values())
            new_ranks = [rank.get(i, 10**6) for i, d in evidence.items() if d == newest]
            old_ranks = [rank.get(i, 10**6) for i, d in evidence.items() if d < newest]
            top10 = {h.id for h in hits[:10]}
            ku_rows.append({
                "question_id": item["question_id"],
                "newer_first": min(new_ranks) < min(old_ranks),
                "recall@10": sum(1 for i in evidence if i in top10) / len(evidence),
            })  # fmt: skip
        progress(f"{n}/{len(items)} questions, {sum(statuses.values())} turns, "
                 f"{time.perf_counter() - started:.0f} s")  # fmt: skip
    return {
        "turns": sum(statuses.values()),
        "statuses": dict(statuses),
        "evidence_hidden": hidden_evidence,
        "evidence_expired_at_question": expired_evidence,
        "knowledge_update": {
            "questions": len(ku_rows),
            "newer_evidence_first": sum(r["newer_first"] for r in ku_rows),
            "turn_recall@10": round(float(np.mean([r["recall@10"] for r in ku_rows])), 4)
            if ku_rows
            else None,
            "rows": ku_rows,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="LongMemEval JSON (.json or .json.gz)")
    parser.add_argument("--embedder", default="local", help="local (default) or hash")
    parser.add_argument("--types", nargs="*", help="only these question types")
    parser.add_argument("--cache", default=str(DEFAULT_PATH))
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    args = parser.parse_args(argv)
    items = read(args.data)
    if args.types:
        items = [i for i in items if i["question_type"] in args.types]
    inner = get_embedder(args.embedder, Settings())
    embedder = DiskCachedEmbedder(inner, Path(args.cache))
    report = run(items, embedder, lambda line: print(line, file=sys.stderr, flush=True))
    ku = report["knowledge_update"]
    print(f"turns logged: {report['turns']}  statuses: {report['statuses']}")
    print(
        f"evidence turns refused or superseded: {report['evidence_hidden']}; expired by "
        f"the question's date (default lifetime): {report['evidence_expired_at_question']}"
    )
    print(f"knowledge-update questions with evidence in 2+ sessions: {ku['questions']}; "
          f"newest evidence ranked above every older one: {ku['newer_evidence_first']}; "
          f"turn recall@10: {ku['turn_recall@10']}")  # fmt: skip
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
