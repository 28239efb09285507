"""LongMemEval retrieval benchmark: memchentic's search against BM25, dense and RRF baselines.

Usage (from the repository root, after ``pip install -e '.[local,dev]'``)::

    HF_HUB_OFFLINE=1 python bench/longmemeval.py --data ../shared/data/longmemeval/dev.json.gz
    python bench/longmemeval.py --data FILE --embedder hash --json out.json
    python bench/longmemeval.py --data FILE --max-questions 10   # spread over the types
    python bench/longmemeval.py --data FILE --types knowledge-update multi-session
    python bench/longmemeval.py --data FILE --ingest add_many    # one add_many per session
    python bench/longmemeval.py --data FILE --ablations          # also the ablation table

``python -m bench.longmemeval`` is the same. Vectors are cached on disk by text
hash (``--cache``), so a second run embeds nothing again. See
``bench/harness/longmemeval.py`` for what is measured and how.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cli, longmemeval  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="LongMemEval JSON (.json or .json.gz)")
    parser.add_argument("--types", nargs="*", help="only these question types")
    parser.add_argument(
        "--max-questions",
        type=int,
        help="at most this many questions, taken in turn from each type",
    )
    return cli.main(
        parser,
        argv,
        longmemeval,
        ranked_what="turns",
        selectors=lambda args: {"types": args.types, "max_questions": args.max_questions},
    )


if __name__ == "__main__":
    raise SystemExit(main())
