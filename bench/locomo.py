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
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cache, ingest, locomo  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of conv-*.json files")
    parser.add_argument("--profile", choices=["rrf", "cosine_decay", "hybrid"], default=None)
    parser.add_argument("--embedder", default="local", help="local (default) or hash")
    parser.add_argument("--conversations", nargs="*", help="only these ids (e.g. 26 30)")
    parser.add_argument("--max-questions", type=int, help="at most this many per conversation")
    parser.add_argument("--ablations", action="store_true", help="also run the ablations")
    parser.add_argument("--no-baselines", action="store_true", help="skip the baselines")
    parser.add_argument("--ingest", choices=ingest.MODES, default="add",
                        help="one add per turn (default) or one add_many per session")
    parser.add_argument("--cache", default=str(cache.DEFAULT_PATH),
                        help="SQLite file of cached vectors (default: %(default)s)")
    parser.add_argument("--workdir", help="folder for the stores (default: a temporary one)")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    parser.add_argument("--ranked", help="write every system's ranked dia_ids (JSON) here")
    args = parser.parse_args(argv)  # fmt: skip
    try:
        report = locomo.run_benchmark(
            args.data,
            embedder=args.embedder,
            profile=args.profile,
            conversations=args.conversations,
            max_questions=args.max_questions,
            ablations=locomo.ABLATIONS if args.ablations else None,
            baselines=not args.no_baselines,
            ingest=args.ingest,
            cache=args.cache,
            workdir=args.workdir,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except FileNotFoundError as exc:
        parser.error(str(exc))
    print(locomo.format_report(report))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(locomo.public(report), indent=2) + "\n")
    if args.ranked:
        Path(args.ranked).write_text(json.dumps(report["_ranked"]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
