"""LoCoMo retrieval benchmark: memchentic's search against BM25, dense and RRF baselines.

Usage (from the repository root, after ``pip install -e '.[local,dev]'``)::

    HF_HUB_OFFLINE=1 python bench/locomo.py --data ../shared/data/locomo
    python bench/locomo.py --data DIR --embedder hash --json out.json
    python bench/locomo.py --data DIR --ablations          # also the ablation table
    python bench/locomo.py --data DIR --ingest add_many    # one add_many per session

``python -m bench.locomo`` is the same. See ``bench/harness/locomo.py`` for what
is measured and how.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cli, locomo  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of conv-*.json files")
    parser.add_argument("--conversations", nargs="*", help="only these ids (e.g. 26 30)")
    parser.add_argument("--max-questions", type=int, help="at most this many per conversation")
    return cli.main(
        parser,
        argv,
        locomo,
        ranked_what="dia_ids",
        selectors=lambda args: {
            "conversations": args.conversations,
            "max_questions": args.max_questions,
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
