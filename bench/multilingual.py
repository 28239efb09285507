"""Multilingual retrieval check (issue 34, item 3): recall@5 of the keyword stage
and of the whole search, per language, with the hash embedder.

The set is ours (``tests/data/multilingual.py``): 40 memories and 40 questions in
each of Chinese, Japanese, German and Spanish, and an English set beside them.
Each language gets a fresh store of its ``KEYWORD_LANGUAGE`` (German and Spanish
stores stem in their language; Chinese and Japanese are read as character
bigrams). The ``english-stem`` rows run the German and Spanish sets in an English
store, to show what the language's stemmer brings; the ``no-bigrams`` rows the
Chinese and Japanese sets with a CJK run read as one word, as before issue 34.

Usage::

    python bench/multilingual.py                      # SQLite, in a temporary folder
    python bench/multilingual.py --store postgresql://user@host/db   # a schema each
    python bench/multilingual.py --json               # the figures as JSON

``recall_at_5(...)`` is what tests/test_multilingual.py pins floors on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memchentic import Memory, Settings, text  # noqa: E402
from memchentic.clock import utcnow  # noqa: E402
from tests.data.multilingual import SETS  # noqa: E402

K = 5


def recall_at_5(
    location: str, pairs: list[tuple[str, str]], language: str
) -> dict[str, float]:
    """Recall@5 of the keyword stage and of the whole search (hash embedder) of the
    ``pairs`` (memory, question) in a new store at ``location``."""
    settings = Settings(keyword_language=language)  # type: ignore[arg-type]
    with Memory(store=location, embedder="hash", settings=settings) as mem:
        added = mem.add_many([memory for memory, _ in pairs], on_duplicate="keep")
        ids = [result.id for result in added]
        flt = mem._read_filter(user_id=None, agent_id=None, namespace=None, now=utcnow())
        keyword = search = 0
        for answer, (_, question) in zip(ids, pairs, strict=True):
            hits = [hit for hit, _ in mem.store.keyword_search(question, K, flt)]
            keyword += answer in hits
            search += answer in [h.memory.id for h in mem.search(question, limit=K)]
    return {"keyword": keyword / len(pairs), "search": search / len(pairs)}


def _location(base: str | None, folder: Path, name: str) -> str:
    if base is None:
        return str(folder / f"{name}.db")
    schema = f"bench_ml_{name}_{uuid.uuid4().hex[:8]}"
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def run(store: str | None = None) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for code, (language, pairs) in SETS.items():
            figures = recall_at_5(_location(store, folder, code), pairs, language)
            rows.append({"set": code, "language": language, "questions": len(pairs), **figures})
            if language != "english":
                figures = recall_at_5(_location(store, folder, f"{code}_en"), pairs, "english")
                rows.append({"set": code, "language": "english-stem",
                             "questions": len(pairs), **figures})  # fmt: skip
            if code in ("zh", "ja"):  # as before issue 34: a CJK run was one token
                with _without_bigrams():
                    figures = recall_at_5(_location(store, folder, f"{code}_1"), pairs, language)
                rows.append({"set": code, "language": "no-bigrams",
                             "questions": len(pairs), **figures})  # fmt: skip
    return rows


@contextlib.contextmanager
def _without_bigrams() -> Iterator[None]:
    """Text analysis without CJK bigrams (a CJK run one token, as before issue 34)."""
    saved = text.CJK_RUN
    text.CJK_RUN = re.compile("(?!)")  # matches nothing
    try:
        yield
    finally:
        text.CJK_RUN = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a postgresql:// URL (default: SQLite files)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    rows = run(args.store)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| set | keyword language | questions | keyword recall@5 | search recall@5 |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['set']} | {row['language']} | {row['questions']} | "
              f"{row['keyword']:.3f} | {row['search']:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
