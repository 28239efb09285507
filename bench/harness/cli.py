"""What the two benchmarks share: the options both CLIs take, writing what a run
found (the table, ``--json``, ``--ranked``), and means of metrics by group."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memchentic import Memory, Settings

from . import cache, ingest

#: Ablations both harnesses run (``--ablations``): each switches one rule of the
#: default ranking off, or moves one knob, from the defaults; see
#: docs/retrieval-quality.md for the tables on both data sets.
ABLATIONS: dict[str, dict[str, Any]] = {
    "role persons off (ROLE_PERSONS=false)": {"search_role_persons": False},
    "relative dates off (RELATIVE_DATES=false)": {"search_relative_dates": False},
    "context off (CONTEXT_WEIGHT=0)": {"search_context_weight": 0.0},
    "context weight 0.25": {"search_context_weight": 0.25},
    "context weight 1.0": {"search_context_weight": 1.0},
    "keyword floor off (MIN_RATIO=0)": {"search_keyword_min_ratio": 0.0},
    "keyword min ratio 0.1": {"search_keyword_min_ratio": 0.1},
    "keyword min ratio 0.5": {"search_keyword_min_ratio": 0.5},
    "speaker off (SPEAKER_BOOST=0)": {"search_speaker_boost": 0.0},
    "speaker boost 0.1": {"search_speaker_boost": 0.1},
    "speaker boost 0.5": {"search_speaker_boost": 0.5},
    "date off (DATE_BOOST=0)": {"search_date_boost": 0.0},
    "horizon off (EPISODIC_RECENCY=0)": {"search_episodic_recency_days": 0.0},
    "episodic recency 365 days": {"search_episodic_recency_days": 365.0},
    "candidate floor off (FLOOR=1)": {"search_candidate_floor": 1},
    "usage off (USAGE_WEIGHT=0)": {"memory_usage_score_weight": 0.0},
    "all off (the ranking before issue 8)": {
        "search_rerank": False,
        "search_role_persons": False,
        "search_relative_dates": False,
        "search_context_weight": 0.0,
        "search_keyword_min_ratio": 0.0,
        "search_speaker_boost": 0.0,
        "search_date_boost": 0.0,
        "search_episodic_recency_days": 0.0,
        "search_candidate_floor": 1,
    },
}

#: The second stage (issue 33, item 1; on by default): off, and without each of
#: its signals, with the entities signal on, and at other depths
#: (``--rerank-ablations``; docs/retrieval-quality.md has the tables).
RERANK_ABLATIONS: dict[str, dict[str, Any]] = {
    "second stage off (SEARCH_RERANK=false)": {"search_rerank": False},
    "second stage, coverage off": {"search_rerank_coverage_weight": 0.0},
    "second stage, proximity off": {"search_rerank_proximity_weight": 0.0},
    "second stage, phrase off": {"search_rerank_phrase_weight": 0.0},
    "second stage, answer type off": {"search_rerank_answer_weight": 0.0},
    "second stage, entities on (0.25)": {"search_rerank_entity_weight": 0.25},
    "second stage, depth 20": {"search_rerank_depth": 20},
    "second stage, depth 40": {"search_rerank_depth": 40},
}


#: Token budgets of the context metric (``--context``; issue 33, item 3).
CONTEXT_BUDGETS = (500, 1000, 2000)


def context_recall(
    mem: Memory, question: str, evidence: set[str], budgets: Sequence[int], **scope: Any
) -> dict[str, float]:
    """What reaches the prompt: for each budget B, the share of the evidence
    memories (ids) among the memories ``mem.context(question, budget_tokens=B)``
    keeps (``context@B``), next to recall@k: the same recall, of a prompt block."""
    out: dict[str, float] = {}
    for budget in budgets:
        ctx = mem.context(question, budget_tokens=budget, **scope)
        kept = {i.id for s in ctx.sections for i in s.items if i.source == "memory"}
        out[f"context@{budget}"] = len(evidence & kept) / len(evidence)
    return out


def extra_metrics(rows: Sequence[tuple[Hashable, Mapping[str, float]]]) -> tuple[str, ...]:
    """The ``context@B`` metrics the rows hold (every row of a run holds the same)."""
    return tuple(k for k in rows[0][1] if k.startswith("context@")) if rows else ()


def context_lines(report: Mapping[str, Any], row: Callable[..., str]) -> list[str]:
    """The table of ``context@B`` of each system that measured it (``--context``);
    ``row(name, cells, width=...)`` formats a line."""
    every = {**report["systems"], **report.get("ablations", {})}
    measured = {n: s["overall"] for n, s in every.items()
                if any(k.startswith("context@") for k in s["overall"])}  # fmt: skip
    if not measured:
        return []
    keys = [k for k in next(iter(measured.values())) if k.startswith("context@")]
    lines = ["", "evidence inside context(question, budget_tokens=B), next to recall@k"]
    lines.append(row("system", [k.replace("context@", "ctx@") for k in keys], width=42))
    for name, o in measured.items():
        lines.append(row(name, [f"{o[k]:.3f}" for k in keys], width=42))
    return lines


class Harness(Protocol):
    """What :func:`main` needs of a harness module (``locomo``, ``longmemeval``)."""

    run_benchmark: Callable[..., dict[str, Any]]
    format_report: Callable[[Mapping[str, Any]], str]
    public: Callable[[Mapping[str, Any]], Mapping[str, Any]]


def variants(
    base: Settings, ablations: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Settings]:
    """The settings each system asks with: ``memchentic`` (the defaults, ``base``)
    and each ablation's overrides on top of them."""
    out = {"memchentic": base}
    for name, overrides in (ablations or {}).items():
        out[name] = base.model_copy(update=dict(overrides))
    return out


def add_common_options(parser: argparse.ArgumentParser, *, ranked_what: str) -> None:
    """Options every harness takes (after its own ``--data`` and selectors)."""
    parser.add_argument(
        "--profile", choices=["rrf", "conversation", "cosine_decay", "hybrid"], default=None
    )
    parser.add_argument("--ablations", action="store_true", help="also run the ablations")
    parser.add_argument(
        "--context", action="store_true",
        help="also measure context@B: evidence inside context(question, budget_tokens=B), "
        "B = 500, 1000, 2000 (memchentic's systems only)",
    )  # fmt: skip
    parser.add_argument(
        "--rerank-ablations", action="store_true",
        help="also run the second stage (SEARCH_RERANK) and its ablations",
    )  # fmt: skip
    parser.add_argument("--embedder", default="local", help="local (default) or hash")
    parser.add_argument("--no-baselines", action="store_true", help="skip the baselines")
    parser.add_argument(
        "--ingest", choices=ingest.MODES, default="add",
        help="one add per turn (default) or one add_many per session",
    )  # fmt: skip
    parser.add_argument(
        "--cache", default=str(cache.DEFAULT_PATH),
        help="SQLite file of cached vectors (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument("--workdir", help="folder for the stores (default: a temporary one)")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    parser.add_argument("--ranked", help=f"write every system's ranked {ranked_what} (JSON) here")


def common_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The ``run_benchmark`` arguments the common options give."""
    return {
        "embedder": args.embedder, "profile": args.profile, "baselines": not args.no_baselines,
        "ingest": args.ingest, "cache": args.cache, "workdir": args.workdir,
        "context_budgets": CONTEXT_BUDGETS if args.context else (),
        "ablations": {**(ABLATIONS if args.ablations else {}),
                      **(RERANK_ABLATIONS if args.rerank_ablations else {})} or None,
        "progress": lambda line: print(line, file=sys.stderr, flush=True),
    }  # fmt: skip


def public(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report without internal fields (for ``--json``)."""
    return {k: v for k, v in report.items() if not k.startswith("_")}


def write_outputs(
    args: argparse.Namespace,
    report: Mapping[str, Any],
    format_report: Callable[[Mapping[str, Any]], str],
    public: Callable[[Mapping[str, Any]], Mapping[str, Any]],
) -> None:
    """Print the table; write ``--json`` and ``--ranked`` when asked."""
    print(format_report(report))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(public(report), indent=2) + "\n")
    if args.ranked:
        Path(args.ranked).write_text(json.dumps(report["_ranked"]) + "\n")


def main(
    parser: argparse.ArgumentParser,
    argv: list[str] | None,
    harness: Harness,
    *,
    ranked_what: str,
    selectors: Callable[[argparse.Namespace], Mapping[str, Any]],
) -> int:
    """A harness's command line: ``parser`` holds its own ``--data`` and selectors,
    ``selectors`` turns them into ``run_benchmark`` arguments; the common options are
    added here, the run's table printed and its files written."""
    add_common_options(parser, ranked_what=ranked_what)
    args = parser.parse_args(argv)
    try:
        report = harness.run_benchmark(args.data, **common_kwargs(args), **selectors(args))
    except FileNotFoundError as exc:
        parser.error(str(exc))
    write_outputs(args, report, harness.format_report, harness.public)
    return 0


def group_means(
    rows: Sequence[tuple[Hashable, Mapping[str, float]]], metrics: Sequence[str]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The mean of each metric over all rows and per group (``str(group)``), each
    with ``n``, the rows it is over."""

    def mean(items: Sequence[Mapping[str, float]]) -> dict[str, float]:
        res = {m: float(np.mean([r[m] for r in items])) if items else 0.0 for m in metrics}
        res["n"] = len(items)
        return res

    groups = sorted({g for g, _ in rows}, key=str)
    by_group = {str(g): mean([m for key, m in rows if key == g]) for g in groups}
    return mean([m for _, m in rows]), by_group
