"""Export and import as JSON Lines: lossless round trip, bad lines, strict mode."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from memchentic import Memory


@pytest.fixture
def src(make_mem) -> Memory:
    """The store to export (closed by ``make_mem`` after the test)."""
    return make_mem("src")


@pytest.fixture
def dst(make_mem) -> Memory:
    """An empty store to import into."""
    return make_mem("dst")


def _populate(m: Memory) -> dict[str, str]:
    t0 = datetime(2025, 3, 1, 12, 30, tzinfo=UTC)
    a = m.add("Bea runs the Thursday book club", user_id="bea", tags=["club"],
              created_at=t0, metadata={"source": "chat"}, title="Book club")  # fmt: skip
    b = m.add("Bea moved the club to Fridays", user_id="bea", created_at=t0 + timedelta(days=9))
    g = m.add("Confirm the venue a week ahead", kind="guide", user_id="bea", permanent=True)
    m.add("Confirm the venue a week ahead", kind="guide", user_id="bea")  # merge: a version
    m.relate(b.id, a.id, "derives_from", 0.7)
    m.revise(a.id, "Bea runs the book club")
    return {"a": a.id, "b": b.id, "g": g.id}


def _export(m: Memory) -> list[dict]:
    out = io.StringIO()
    m.export(out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_round_trip_is_lossless(src: Memory, dst: Memory):
    ids = _populate(src)
    lines = _export(src)
    buf = io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n")
    report = dst.import_(buf)
    # the edges: b derives from a, and b supersedes a ("moved ... to Fridays": an update)
    assert report.errors == [] and report.memories == 3 and report.edges == 2
    assert dst.get(ids["a"], touch=False).superseded_by == ids["b"]
    again = _export(dst)
    strip = [x for x in lines if x["kind"] != "header"]
    assert strip == [x for x in again if x["kind"] != "header"]
    assert dst.get(ids["a"], touch=False).created_at == src.get(ids["a"], touch=False).created_at
    assert [h.id for h in dst.search("book club", user_id="bea")][0] in (ids["a"], ids["b"])
    assert [v.op for v in dst.history(ids["g"])] == ["add", "merge"]


def test_bad_lines_are_reported_and_the_rest_imported(src: Memory, dst: Memory):
    _populate(src)
    lines = [json.dumps(x) for x in _export(src)]
    lines.insert(2, "{not json")
    lines.insert(
        4,
        json.dumps(
            {"kind": "memory", "record": {"id": "x", "namespace": "user:bea", "content": ""}}
        ),
    )
    report = dst.import_(io.StringIO("\n".join(lines)))
    assert [n for n, _ in report.errors] == [3, 5]
    assert "content" in report.errors[1][1]
    assert report.memories == 3


def test_strict_import_refuses_the_whole_file(src: Memory, dst: Memory):
    _populate(src)
    lines = [json.dumps(x) for x in _export(src)] + ["[1, 2"]
    report = dst.import_(io.StringIO("\n".join(lines)), strict=True)
    assert report.errors and report.memories == 0
    assert dst.list(include_expired=True) == []


def test_import_without_vectors_re_embeds(src: Memory, dst: Memory):
    ids = _populate(src)
    out = io.StringIO()
    src.export(out, vectors=False)
    assert '"vector"' not in out.getvalue()
    dst.import_(io.StringIO(out.getvalue()))
    assert dst.search("venue week ahead", user_id="bea")[0].id == ids["g"]
