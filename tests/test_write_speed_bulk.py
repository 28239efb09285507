"""The bulk write path looks further for writes whose nearest stored neighbours are
mostly expired (issue 36, item 3): it decides them in bulk, as one-by-one ``add``
calls would, instead of sending each one by one. In a conversation written with
its turns' times, older turns expire (``MEMORY_DEFAULT_TTL_DAYS``) and fill the
nearest neighbours of the later ones."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memchentic import Memory
from memchentic.write import resolve

from .conftest import TableEmbedder
from .test_bulk_write import _created, _outcome, _state

DIM = 16
_WORDS = ("tea", "chess", "rowing", "jazz", "pottery", "sailing", "tango", "cider", "kites",
          "opera", "rugby", "origami")  # fmt: skip


def _scenario(
    seed: int,
) -> tuple[dict[str, list[float]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(vectors, old items that expire, the batch written ten days later): every text
    near one topic, the old ones nearest, so the 2k nearest of each new write are
    expired and the live ones it is compared with lie further away."""
    rng = np.random.default_rng(seed)
    topic = rng.standard_normal(DIM)
    topic /= np.linalg.norm(topic)
    table: dict[str, list[float]] = {}

    def vector(step: float) -> list[float]:
        v = topic + step * rng.standard_normal(DIM) / np.sqrt(DIM)
        return (v / np.linalg.norm(v)).tolist()

    then = datetime(2025, 1, 1, tzinfo=UTC)
    later = then + timedelta(days=10)
    old = []
    for i in range(40):
        text = f"Ana said the club meets on floor {i} for {_WORDS[i % len(_WORDS)]}"
        table[text] = vector(0.05)
        old.append({"content": text, "ttl_days": 1, "created_at": then, "now": then})
    live = []
    for i in range(6):
        text = f"Ana likes {_WORDS[i]} with {_WORDS[-1 - i]} after work"
        table[text] = vector(0.6)
        live.append({"content": text, "created_at": then, "now": then})
    batch = []
    pairs = [(a, b) for a in _WORDS for b in _WORDS if a < b]
    for i in rng.permutation(len(pairs))[:30]:
        text = "Ana wants {} and {}".format(*pairs[int(i)])
        table[text] = vector(0.5)
        batch.append({"content": text, "created_at": later, "now": later})
    return table, old + live, batch


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_add_many_with_expired_neighbours_decides_like_one_by_one(
    make_mem: Callable[..., Memory], seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, stored, batch = _scenario(seed)
    one = make_mem("one", embedder=TableEmbedder(table, dimension=DIM))
    bulk = make_mem("bulk", embedder=TableEmbedder(table, dimension=DIM))
    for m in (one, bulk):
        m.add_many(stored)

    sequential = [one.add(**item) for item in batch]
    singly: list[str] = []
    inner = resolve.resolve

    def counted(ctx: Any, record: Any, vector: Any) -> Any:
        singly.append(record.content)
        return inner(ctx, record, vector)

    monkeypatch.setattr(resolve, "resolve", counted)
    together = bulk.add_many(batch)

    assert _outcome(sequential, _created(one)) == _outcome(together, _created(bulk))
    assert _state(one) == _state(bulk)
    # the expired neighbours were looked past in bulk: most writes never went one by one
    added = sum(r.status == "added" for r in together)
    assert added >= 20
    assert len(singly) < len(batch) // 2
