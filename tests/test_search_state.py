"""The search's state of each store (issue 36, item 2): what a search reads of
every memory without SQL (SQLite keeps one per store object, shared by its
threads' connections, ``store/sqlite_state.py``) must follow every write,
whoever makes it: the same ``Memory``, or another one on the same store
(another connection, as another process would be).

Each test searches through ``a`` (so its state is built), changes the store
through ``b`` (or ``a`` itself), and checks that ``a``'s next search sees the
change and ranks exactly as a ``Memory`` opened afterwards (with no state yet).
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memchentic import Memory

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=2)
QUERY = "what did we say about the hiking trip to the lake"

TURNS = [
    # (session, minute, text)
    ("s1", 0, "I am planning a hiking trip to the lake next month"),
    ("s1", 1, "Which lake are you thinking of, the one up north?"),
    ("s1", 2, "Yes, Crater Lake, with my sister and two friends"),
    ("s1", 3, "Remember to book the campsite early"),
    ("s2", 0, "My sister bought new boots for the trip"),
    ("s2", 1, "Good boots matter on a long hike"),
    ("s2", 2, "We also need a water filter for the lake"),
    ("s3", 0, "The weather report says rain on Saturday"),
    ("s3", 1, "Then we go hiking on Sunday instead"),
    ("s3", 2, "Pack the tent and the stove"),
]


def _log(mem: Memory) -> list[str]:
    ids = []
    for session, minute, text in TURNS:
        at = T0 + timedelta(hours=int(session[1:]), minutes=minute)
        result = mem.add(text, user_id="u", session_id=session, type="episodic", permanent=True,
                         on_duplicate="keep", created_at=at, valid_from=at, now=at)  # fmt: skip
        assert result.id is not None
        ids.append(result.id)
    return ids


def _ranked(mem: Memory, now: datetime = NOW) -> list[tuple[str, float, dict[str, float]]]:
    hits = mem.search(QUERY, user_id="u", limit=8, now=now, include_trace=True)
    return [(h.memory.id, h.score, dict(h.trace or {})) for h in hits]


def _as_fresh(a: Memory, fresh: Callable[[], Memory], now: datetime = NOW) -> list[str]:
    """``a``'s ranking equals that of a Memory opened now; its ids. (Searched twice:
    a search counts recalls after ranking, which the next one reads.)"""
    _ranked(a, now)
    seen = _ranked(a, now)
    assert seen == _ranked(fresh(), now)
    return [i for i, _, _ in seen]


@pytest.fixture
def pair(make_mem: Callable[..., Memory]) -> tuple[Memory, Memory, Callable[[], Memory], list[str]]:
    a = make_mem("shared")
    ids = _log(a)
    b = make_mem("shared")
    _as_fresh(a, lambda: make_mem("shared"))
    return a, b, lambda: make_mem("shared"), ids


Change = Callable[[Memory, list[str]], Any]
CHANGES: dict[str, Change] = {
    "delete": lambda m, ids: m.delete(ids[0]),
    "revise content": lambda m, ids: m.revise(ids[2], "We drove to the coast instead", now=NOW),
    "revise metadata": lambda m, ids: m.revise(ids[1], metadata={"mood": "glad"}, now=NOW),
    "add into a session": lambda m, ids: m.add(
        "The lake trail is closed for repairs",
        user_id="u",
        session_id="s1",
        type="episodic",
        permanent=True,
        on_duplicate="keep",
        created_at=T0 + timedelta(hours=1, seconds=90),
        now=NOW,
    ),  # fmt: skip
    "expire": lambda m, ids: m.revise(ids[0], expires_at=NOW + timedelta(minutes=1), now=NOW),
    "delete all": lambda m, ids: m.delete_all(user_id="u"),
    "import": lambda m, ids: _import(m),
}


def _import(into: Memory) -> None:
    """Import into ``into`` a turn of session s1 exported from another store."""
    with (
        tempfile.TemporaryDirectory() as folder,
        Memory(f"{folder}/other.db", embedder="hash") as other,
    ):
        other.add("Crater Lake hiking permits arrive by mail", user_id="u", session_id="s1",
                  type="episodic", permanent=True, on_duplicate="keep",
                  created_at=T0 + timedelta(hours=1, minutes=5), now=NOW)  # fmt: skip
        exported = io.StringIO()
        other.export(exported)
    exported.seek(0)
    assert into.import_(exported).memories == 1


@pytest.mark.parametrize("through", ["another Memory", "the same Memory"])
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_write_reaches_the_next_search(
    pair: tuple[Memory, Memory, Callable[[], Memory], list[str]], name: str, through: str
) -> None:
    a, b, fresh, ids = pair
    before = _as_fresh(a, fresh)
    _ranked(a)  # a takes in what the fresh Memory wrote (its recalls): then only the change
    CHANGES[name](b if through == "another Memory" else a, ids)
    when = NOW + timedelta(days=3650) if name == "expire" else NOW  # past any expiry
    after = _as_fresh(a, fresh, when)
    if name in ("delete", "expire"):
        assert ids[0] in before and ids[0] not in after
    if name == "delete all":
        assert before and not after


def test_expiry_is_read_at_each_search(make_mem: Callable[..., Memory]) -> None:
    a = make_mem("shared")
    ids = _log(a)
    a.revise(ids[0], expires_at=NOW + timedelta(hours=1), now=NOW)
    assert ids[0] in _as_fresh(a, lambda: make_mem("shared"))
    later = NOW + timedelta(days=3650)  # past it, however far revise and recalls set it
    assert ids[0] not in _as_fresh(a, lambda: make_mem("shared"), later)


def test_recall_counting_reaches_the_next_search(make_mem: Callable[..., Memory]) -> None:
    """A search counts the recalls of what it returns; the next search ranks with
    them (``usage``), through the same Memory and through another one."""
    a = make_mem("shared")
    _log(a)
    b = make_mem("shared")
    first = _ranked(a)
    second = _ranked(a)
    assert [s for _, s, _ in first] != [s for _, s, _ in second]  # usage moved the scores
    assert _ranked(b) == second == _ranked(make_mem("shared"))
    much_later = NOW + timedelta(days=1)  # past the debounce: counted again, through b
    _ranked(b, much_later)
    assert _ranked(a, much_later) == _ranked(make_mem("shared"), much_later)


def _sqlite_pair(tmp_path: Any) -> tuple[Memory, Memory, Callable[[], Memory], list[str]]:
    path = tmp_path / "state.db"
    a = Memory(path=path, embedder="hash")
    ids = _log(a)
    b = Memory(path=path, embedder="hash")
    _as_fresh(a, lambda: Memory(path=path, embedder="hash"))
    _ranked(a)
    return a, b, lambda: Memory(path=path, embedder="hash"), ids


def _count_whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from memchentic.store import sqlite_state

    calls: list[int] = []
    whole = sqlite_state.RankState._read_whole

    def counted(self: Any, conn: Any, rows: Any) -> bool:
        calls.append(1)
        return whole(self, conn, rows)

    monkeypatch.setattr(sqlite_state.RankState, "_read_whole", counted)
    return calls


def test_another_connections_write_is_read_by_its_rows_alone(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: another connection's commit (a thread, a worker, a process) makes
    the state read again only the rows it wrote (``memory_log``), not every row:
    under concurrent clients every search finds another's commit."""
    a, b, fresh, ids = _sqlite_pair(tmp_path)
    whole = _count_whole_reads(monkeypatch)
    for name in ("revise content", "add into a session", "delete"):
        CHANGES[name](b, ids)
        _ranked(a)
    assert whole == []
    monkeypatch.undo()
    assert ids[0] not in _as_fresh(a, fresh)


def test_a_state_behind_what_the_log_keeps_reads_every_row(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the log no longer holds the entries after a state's position (it keeps
    its last 100,000), or the store's index epoch changed (a restore), the state
    is read whole and ranks as a fresh one."""
    a, b, fresh, ids = _sqlite_pair(tmp_path)
    whole = _count_whole_reads(monkeypatch)
    CHANGES["delete"](b, ids)
    with b.store.write():  # as the log's pruning would: the entries a has not read
        b.store.conn.execute("DELETE FROM memory_log")
    _ranked(a)
    assert len(whole) == 1
    with b.store.write():
        b.store.conn.execute("UPDATE meta SET value = 'another epoch' WHERE key = 'index_epoch'")
    _ranked(a)
    assert len(whole) == 2
    monkeypatch.undo()
    assert ids[0] not in _as_fresh(a, fresh)


def test_the_log_keeps_its_last_entries(tmp_path: Any) -> None:
    """``memory_log`` drops entries 100,000 behind its newest (every 1,000th entry
    prunes), so recall counting and writes do not grow it without bound."""
    with Memory(path=tmp_path / "log.db", embedder="hash") as m:
        ids = _log(m)
        with m.store.write():
            m.store.conn.execute(
                "UPDATE sqlite_sequence SET seq = 199990 WHERE name = 'memory_log'"
            )
        for n in range(12):
            m.revise(ids[1], metadata={"n": n}, now=NOW)
        seqs = [r[0] for r in m.store.conn.execute("SELECT seq FROM memory_log")]
        assert max(seqs) > 200_000
        assert min(seqs) > 100_000  # the first entries (1..) are gone


def test_threads_of_one_store_share_one_state(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: every thread has its own connection, but the store keeps one state
    (a server's threads hold one copy, not one each): a thread's first search reads
    no row again, another thread's write reaches this thread's next search, and
    both rank as a fresh store."""
    import threading

    a, _, fresh, ids = _sqlite_pair(tmp_path)
    whole = _count_whole_reads(monkeypatch)
    seen: list[list[tuple[str, float, dict[str, float]]]] = []
    errors: list[BaseException] = []

    def in_thread(work: Callable[[], Any]) -> None:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        t = threading.Thread(target=run)
        t.start()
        t.join()

    in_thread(lambda: seen.append(_ranked(a)))
    in_thread(lambda: CHANGES["delete"](a, ids))
    in_thread(lambda: seen.append(_ranked(a)))
    assert errors == []
    assert whole == []  # the threads' connections read no row whole
    assert ids[0] in [i for i, _, _ in seen[0]]
    assert ids[0] not in [i for i, _, _ in seen[1]]
    monkeypatch.undo()
    assert ids[0] not in _as_fresh(a, fresh)
