"""Run a benchmark with only some of the keyword stage's rules
(:data:`memchentic.text.KEYWORD_RULES`): their ablation rows on LoCoMo and
LongMemEval (issue 33, items 4 and 5).

The rules change what the keyword index holds, so they cannot be an ablation of
the search settings: each run logs its stores anew with the rules given.

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 python bench/keyword_rules.py --rules none -- \\
        locomo --data ../shared/data/locomo --json /tmp/locomo_no_rules.json
    python bench/keyword_rules.py --rules identifiers -- longmemeval --data FILE
    python bench/keyword_rules.py --rules identifiers --fuzzy -- locomo --data DIR
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds ``bench``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memchentic import text  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rules", required=True,
        help=f"comma-separated rules to apply ({', '.join(text.KEYWORD_RULES)}), or none",
    )  # fmt: skip
    parser.add_argument(
        "--fuzzy", action="store_true",
        help="with the fuzzy keyword path simulated (bench/fuzzy_keywords.py)",
    )  # fmt: skip
    parser.add_argument("bench", choices=["locomo", "longmemeval", "own_sets"])
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark's own options")
    args = parser.parse_args(argv)
    rules = frozenset() if args.rules == "none" else frozenset(args.rules.split(","))
    unknown = rules - set(text.KEYWORD_RULES)
    if unknown:
        parser.error(f"no keyword rule {', '.join(sorted(unknown))}")
    text.ACTIVE_KEYWORD_RULES = rules
    if args.bench == "locomo":
        from bench import locomo as bench
    elif args.bench == "longmemeval":
        from bench import longmemeval as bench  # type: ignore[no-redef]
    else:
        from bench import own_sets as bench  # type: ignore[no-redef]
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    if not args.fuzzy:
        return bench.main(rest)
    from bench.fuzzy_keywords import fuzzy_keyword_search

    with fuzzy_keyword_search() as trace:
        code = bench.main(rest)
    reasons = Counter(reason for _, _, reason in trace)
    print(f"fuzzy path: {len(trace)} terms added ({dict(reasons)})", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
