"""LongMemEval retrieval benchmark: memchentic's search against BM25, dense and RRF baselines.

Usage (from the repository root, after ``pip install -e '.[local,dev]'``)::

    HF_HUB_OFFLINE=1 python bench/longmemeval.py --data ../shared/data/longmemeval/dev.json.gz
    python bench/longmemeval.py --data FILE --embedder hash --json out.json
    python bench/longmemeval.py --data FILE --max-questions 10   # spread over the types
    python bench/longmemeval.py --data FILE --types knowledge-update multi-session
    python bench/longmemeval.py --data FILE --ingest add_many    # one add_many per session

``python -m bench.longmemeval`` is the same. Vectors are cached on disk by text
hash (``--cache``), so a second run embeds nothing again. See
``bench/harness/longmemeval.py`` for what is measured and how.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cache, ingest, longmemeval  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="LongMemEval JSON (.json or .json.gz)")
    parser.add_argument("--profile", choices=["rrf", "cosine_decay", "hybrid"], default=None)
    parser.add_argument("--embedder", default="local", help="local (default) or hash")
    parser.add_argument("--types", nargs="*", help="only these question types")
    parser.add_argument("--max-questions", type=int,
                        help="at most this many questions, taken in turn from each type")
    parser.add_argument("--no-baselines", action="store_true", help="skip the baselines")
    parser.add_argument("--ingest", choices=ingest.MODES, default="add",
                        help="one add per turn (default) or one add_many per session")
    parser.add_argument("--cache", default=str(cache.DEFAULT_PATH),
                        help="SQLite file of cached vectors (default: %(default)s)")
    parser.add_argument("--workdir", help="folder for the stores (default: a temporary one)")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    parser.add_argument("--ranked", help="write every system's ranked turns (JSON) here")
    args = parser.parse_args(argv)  # fmt: skip
    try:
        report = longmemeval.run_benchmark(
            args.data,
            embedder=args.embedder,
            profile=args.profile,
            types=args.types,
            max_questions=args.max_questions,
            baselines=not args.no_baselines,
            ingest=args.ingest,
            cache=args.cache,
            workdir=args.workdir,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except FileNotFoundError as exc:
        parser.error(str(exc))
    print(longmemeval.format_report(report))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(longmemeval.public(report), indent=2) + "\n")
    if args.ranked:
        Path(args.ranked).write_text(json.dumps(report["_ranked"]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
