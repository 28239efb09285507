"""Search latency with the query embedding in it (issue 25, item 5).

``bench/search_scale.py --embedders static local`` calls :func:`run_end_to_end`
on each size's store after its own figures. The store's vectors are the
synthetic corpus's (384 dimensions, so every size is built once); for each
named embedder the timed call is the whole ``Memory.search`` with an embedder
that embeds the query text for real with that embedder (its full cost, in the
search call) and then hands the pipeline the query's synthetic vector, so the
ranking stays comparable with the store's vectors. The embedders and the plain
search (no embedding: the synthetic vector only) are interleaved query by query,
their order rotated each query, so the machine's noise falls on all alike. The
query embedding alone is timed in the same loop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memchentic import Embedder, Memory
from memchentic.embed import get_embedder


class QueryCost(Embedder):
    """Embeds with ``real`` (the cost), answers with the table's vector (the store's space)."""

    def __init__(self, real: Embedder, table: dict[str, np.ndarray], like: Embedder) -> None:
        self.real, self.table = real, table
        self.name, self.model, self.dimension = like.name, like.model, like.dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.real.embed_batch(texts)
        return np.stack([self.table[t] for t in texts])


def _pct(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000.0, q))


def run_end_to_end(
    mem: Memory,
    names: Sequence[str],
    warm: Sequence[tuple[str, str, np.ndarray]],
    timed: Sequence[tuple[str, str, np.ndarray]],
    table: dict[str, np.ndarray],
    limit: int,
) -> dict[str, Any]:
    """p50/p95 of the whole search with each embedder's query embedding, of the
    embedding alone, and of the search without one, interleaved (see module doc)."""
    plain = mem.embedder
    embedders: dict[str, Embedder] = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            embedders[name] = get_embedder(name, mem.settings)
        except Exception as exc:  # not installed here: skip it, as the peers are
            skipped[name] = f"{type(exc).__name__}: {exc}"
    costly = {name: QueryCost(real, table, plain) for name, real in embedders.items()}
    systems = ["no embedding", *embedders]
    search: dict[str, list[float]] = {s: [] for s in systems}
    embed_only: dict[str, list[float]] = {name: [] for name in embedders}
    try:
        for _, text, _ in warm:
            for name, real in embedders.items():
                real.embed(text)
                mem.embedder = costly[name]
                mem.search(text, limit=limit)
        for k, (_, text, _) in enumerate(timed):
            order = systems[k % len(systems):] + systems[: k % len(systems)]
            for system in order:
                mem.embedder = plain if system == "no embedding" else costly[system]
                start = time.perf_counter()
                mem.search(text, limit=limit)
                search[system].append(time.perf_counter() - start)
                if system != "no embedding":
                    start = time.perf_counter()
                    embedders[system].embed(text)
                    embed_only[system].append(time.perf_counter() - start)
    finally:
        mem.embedder = plain
    rows = {}
    for system in systems:
        row = {"search_p50_ms": round(_pct(search[system], 50), 2),
               "search_p95_ms": round(_pct(search[system], 95), 2)}  # fmt: skip
        if system in embedders:
            row["model"] = embedders[system].model
            row["embed_p50_ms"] = round(_pct(embed_only[system], 50), 3)
            row["embed_p95_ms"] = round(_pct(embed_only[system], 95), 3)
        rows[system] = row
    return {"systems": rows, "skipped": skipped, "queries": len(timed)}


def print_end_to_end(results: Sequence[dict[str, Any]]) -> None:
    """One table: size x system, search p50/p95 with the query embedding, embedding alone."""
    print("\nsearch with the query embedding (ms; interleaved query by query)")
    print(f"{'N':>9} {'embedder':<14} {'search p50':>10} {'p95':>8} {'embed p50':>10} {'p95':>8}")
    for result in results:
        e2e = result.get("end_to_end")
        if not e2e:
            continue
        for system, row in e2e["systems"].items():
            print(f"{result['n']:>9,} {system:<14} {row['search_p50_ms']:>10.2f} "
                  f"{row['search_p95_ms']:>8.2f} {row.get('embed_p50_ms', 0):>10.3f} "
                  f"{row.get('embed_p95_ms', 0):>8.3f}")  # fmt: skip
        for name, why in e2e["skipped"].items():
            print(f"{result['n']:>9,} {name:<14} skipped: {why}")
