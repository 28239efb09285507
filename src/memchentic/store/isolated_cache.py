"""What the isolated searches of one set of namespaces reuse between searches
(the SQLite store's :mod:`.sqlite_isolated`; issue 36, item 4).

An untrusted caller's search reads its visible rows on every search: their vectors
for the exact scan, and the words of its keyword matches for BM25 statistics of
the visible rows only. Both are kept here, per set of namespaces, so a search
reads only what passes its filter (row ids) and what changed since:

* **Vectors** (:meth:`VisibleState.vectors`): a matrix of the rows' float32
  vectors and their norms, current to a position in the store's ``vector_log``
  (every insert, re-embedding and deletion of a vector is logged there by
  triggers, in every process). Before use, the entries logged since are read and
  their rows dropped (read again when they next pass a filter); a new
  ``index_epoch`` (a restore, a reindex) or a log that went back drops all.
  Rows are only ever appended, never changed in place, so a search computes on
  a snapshot outside the lock.
* **Keyword documents and terms** (:meth:`VisibleState.analysed`): each
  matched row's index terms with their counts and its length, and each scanned
  row's set of index terms, kept with the row's title, content and tags; a row
  whose text is no longer what was kept is analysed again (a row a search only
  touched is not). Nothing to invalidate: the analyses are a function of the
  text (and of the store's keyword language, rules and title weight, which are
  checked too). So a search stems its query's words, and a row's words once per
  text: never every word the caller may see at every search.

* **The rows a filter passes** (:meth:`VisibleState.visible`): the keys and ids of
  the rows passing one filter, as its statement read them, kept only while the
  store's ``memory_log`` (every insert, update and delete of a memory, by any
  connection or process, logged by triggers) has not moved and the clock has not
  reached the earliest expiry among them; any write to any memory, a new
  ``index_epoch``, or a filter that reads another table (``written_by``) reads
  them again.
* **Keyword documents by log** (:meth:`VisibleState.documents`): each matched
  row's index terms, kept while the ``memory_log`` logs no change of its row
  (the entries since are read before use and their rows dropped), so a search
  reads the keys of its keyword matches, not their text.

A state is keyed by its namespaces, so it holds only rows of those namespaces,
put there by searches that could read them; a filter's rows are kept with the
whole filter. Not used inside a transaction (the reads could hold uncommitted
rows).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

#: Sets of namespaces kept at most (each an identity's, or a scope of one).
MAX_STATES = 256
#: Filters whose passing rows a state keeps at once (:meth:`VisibleState.visible`).
MAX_FILTERS = 4
#: Analyses rows' texts: ``[(title, content, tags)] -> [an analysis of each]``.
Analyse = Callable[[Sequence[tuple[str, str, str]]], list[Any]]
#: Reads vectors: ``rowids -> [(rowid, float32 bytes)]`` (rows without one left out).
ReadVectors = Callable[[Sequence[int]], list[tuple[int, bytes]]]


class VisibleState:
    """The cached vectors and keyword documents of one set of namespaces."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: The ``index_epoch`` and ``vector_log`` position the vectors are current to.
        self.epoch: str | None = None
        self.seq = -1
        #: rowid -> row of ``matrix``; rows past ``size`` are spare capacity.
        self.rows: dict[int, int] = {}
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.norms = np.zeros(0, dtype=np.float32)
        self.size = 0
        #: Grows with every change of the held rows; the last :meth:`vectors` answer,
        #: for that version and those keys.
        self.version = 0
        self._ordered: tuple[int, list[int], tuple[np.ndarray, np.ndarray, Any]] | None = None
        #: kind -> rowid -> ((title, content, tags), what the keyword stage made of it)
        self.kept: dict[str, dict[int, tuple[tuple[str, str, str], Any]]] = {}
        self.basis: Hashable = None
        #: The rows each recent filter passed (:meth:`visible`), newest last.
        self._visible: list[tuple[Any, Visible]] = []
        #: The ``(index_epoch, memory_log position)`` :attr:`logged` is current to
        #: (None: not read yet); what the keyword stage made of each row, by kind
        #: (its document, its words) and rowid, valid while the log names no
        #: change of the row.
        self.logged_at: tuple[str | None, int] | None = None
        self.logged: dict[str, dict[int, Any]] = {}
        self.logged_basis: Hashable = None

    # --- vectors ------------------------------------------------------------------------
    def catch_up(
        self, epoch: str | None, seq: int, changed: Callable[[int, int], list[int]]
    ) -> None:
        """Drop the rows whose vectors changed since :attr:`seq` (``changed(after,
        upto)`` reads their keys from the log), or every row on a new epoch, a log
        that went back, or more changes than rows held (reading them again is
        cheaper than reading the log). Under :attr:`lock`."""
        if epoch != self.epoch or seq < self.seq or seq - self.seq > max(len(self.rows), 64):
            self._drop_vectors()
        elif seq > self.seq:
            for key in changed(self.seq, seq):
                if self.rows.pop(key, None) is not None:
                    self.version += 1
        self.epoch, self.seq = epoch, seq

    def _drop_vectors(self) -> None:
        self.version += 1
        self.rows = {}
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.norms = np.zeros(0, dtype=np.float32)
        self.size = 0

    def vectors(
        self, keys: list[int], read: ReadVectors
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(matrix, norms, held)``: the vectors of ``keys`` in their order (rows
        without one left out), each one's norm, and which of ``keys`` have one
        (None: all). Rows not held are read first. Under :attr:`lock`, after
        :meth:`catch_up`. The arrays are new (never changed afterwards), and kept
        for the next call with the same keys while no held row changes."""
        last = self._ordered
        if last is not None and last[0] == self.version and last[1] == keys:
            return last[2]
        missing = [key for key in keys if key not in self.rows]
        if missing:
            found = read(missing)
            if found and self.size and len(found[0][1]) != 4 * self.matrix.shape[1]:
                self._drop_vectors()  # another model's vectors (a new epoch reads alike)
                found = read(keys)
            if found:
                self._append(found)
        if self.size > 2 * len(self.rows) + 1024:  # mostly dropped rows: keep the live ones
            self._compact()
        rows = self.rows
        positions = np.fromiter((rows.get(key, -1) for key in keys), np.int64, len(keys))
        held = None
        if (positions < 0).any():
            held = positions >= 0
            positions = positions[held]
        out = (self.matrix[positions], self.norms[positions], held)
        self._ordered = (self.version, keys, out)
        return out

    def _append(self, found: list[tuple[int, bytes]]) -> None:
        self.version += 1
        block = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32)
        block = block.reshape(len(found), -1)
        norms = np.linalg.norm(block, axis=1)
        if self.size + len(found) > len(self.matrix):  # new arrays: snapshots keep theirs
            capacity = max(2 * (self.size + len(found)), 256)
            matrix = np.empty((capacity, block.shape[1]), dtype=np.float32)
            grown = np.empty(capacity, dtype=norms.dtype)
            if self.size:
                matrix[: self.size] = self.matrix[: self.size]
                grown[: self.size] = self.norms[: self.size]
            self.matrix, self.norms = matrix, grown
        end = self.size + len(found)
        self.matrix[self.size : end] = block  # past every snapshot's end
        self.norms[self.size : end] = norms
        for offset, (key, _) in enumerate(found):
            self.rows[key] = self.size + offset
        self.size = end

    def _compact(self) -> None:
        self.version += 1
        keys = list(self.rows)
        at = np.fromiter(self.rows.values(), dtype=np.int64, count=len(keys))
        self.matrix = self.matrix[at].copy()
        self.norms = self.norms[at].copy()
        self.rows = {key: i for i, key in enumerate(keys)}
        self.size = len(keys)

    # --- what the keyword stage reads of each row -----------------------------------------
    def analysed(
        self,
        kind: str,
        rows: Sequence[tuple[int, tuple[str, str, str]]],
        basis: Hashable,
        analyse: Analyse,
        limit: int,
    ) -> list[Any]:
        """Each row's analysis of this ``kind`` (a keyword document, a row's words):
        kept ones whose text is unchanged, the others analysed (in one call) and kept;
        ``basis`` names what the analysis depends on beside the text (a change drops
        all); at most ``limit`` kept of each kind."""
        with self.lock:
            if basis != self.basis:
                self.kept, self.basis = {}, basis
            kept = self.kept.setdefault(kind, {})
            if len(kept) > limit:
                kept.clear()
            out: list[Any] = []
            todo: list[int] = []
            for i, (key, text) in enumerate(rows):
                found = kept.get(key)
                if found is not None and found[0] == text:
                    out.append(found[1])
                else:
                    out.append(None)
                    todo.append(i)
        if todo:
            fresh = analyse([rows[i][1] for i in todo])
            with self.lock:
                for i, value in zip(todo, fresh, strict=True):
                    out[i] = value
                    if self.basis == basis and kept is self.kept.get(kind):
                        kept[rows[i][0]] = (rows[i][1], value)
        return out

    # --- which rows a filter passes ------------------------------------------------------
    def visible(self, flt: Any, mark: tuple[str | None, int], now: str | None) -> Visible | None:
        """The rows ``flt`` passed when read at the same ``mark`` (the store's
        ``index_epoch`` and ``memory_log`` position), while the clock (``now``, the
        filter's time as stored text; None: a filter that ignores expiry) has not
        gone back before that read nor reached the earliest expiry among them."""
        with self.lock:
            for kept_flt, found in reversed(self._visible):
                if found.mark == mark and found.covers(now) and kept_flt == flt:
                    return found
        return None

    def keep_visible(self, flt: Any, found: Visible) -> None:
        """Keep what :meth:`visible` answers for ``flt`` (the newest :data:`MAX_FILTERS`
        filters; another mark replaces all)."""
        with self.lock:
            kept = [(f, v) for f, v in self._visible if v.mark == found.mark and f != flt]
            self._visible = [*kept[-(MAX_FILTERS - 1) :], (flt, found)]

    # --- keyword documents, current to the memory log -------------------------------------
    def catch_up_rows(
        self,
        mark: tuple[str | None, int],
        changed: Callable[[int, int], list[int] | None],
    ) -> None:
        """Bring :attr:`logged` up to ``mark``: drop the rows the memory log
        names since (``changed(after, upto)``: their keys, None when the log no longer
        holds them all), or every row on a new epoch or a log that went back. Under
        :attr:`lock`, with ``mark`` read under it (marks only grow while nothing is
        restored)."""
        last = self.logged_at
        if last is not None and last[0] == mark[0] and mark[1] >= last[1]:
            if mark[1] > last[1]:
                keys = changed(last[1], mark[1])
                if keys is None:
                    self.logged = {}
                else:
                    for kept in self.logged.values():
                        for key in keys:
                            kept.pop(key, None)
        else:
            self.logged = {}
        self.logged_at = mark

    @property
    def documents_kept(self) -> dict[int, Any]:
        """The keyword documents kept by log (:meth:`documents`), by rowid."""
        return self.logged.get("documents", {})

    def documents(
        self, keys: Sequence[int], basis: Hashable, kind: str = "documents"
    ) -> tuple[list[Any], list[int]]:
        """The kept analyses of this ``kind`` of ``keys`` (None where none is kept)
        and the keys without one. Under :attr:`lock`, after :meth:`catch_up_rows`."""
        if basis != self.logged_basis:
            self.logged, self.logged_basis = {}, basis
        kept = self.logged.get(kind, {})
        out = [kept.get(key) for key in keys]
        return out, [key for key, value in zip(keys, out, strict=True) if value is None]

    def keep_documents(
        self,
        mark: tuple[str | None, int],
        basis: Hashable,
        analysed: Sequence[tuple[int, Any]],
        limit: int,
        kind: str = "documents",
    ) -> None:
        """Keep ``analysed`` (rowid, analysis of this ``kind``), made of text read
        after ``mark`` was current, unless the state moved past ``mark`` since (a
        change logged after it may be one of these rows, already caught up); at
        most ``limit`` rows of a kind."""
        with self.lock:
            if self.logged_at != mark or basis != self.logged_basis:
                return
            kept = self.logged.setdefault(kind, {})
            if len(kept) + len(analysed) > limit:
                kept.clear()
            kept.update(analysed)

    def held(self) -> int:
        """Rows held (vectors, documents, the keys of the filters' rows), for the
        cache's budget."""
        return (
            self.size + sum(len(rows) for rows in self.kept.values())
            + sum(len(rows) for rows in self.logged.values())
            + sum(len(found.keys) for _, found in self._visible)
        )  # fmt: skip


class Visible:
    """The rows a filter passed: their keys and ids in the order its statement read
    them, read at ``mark``, valid from the time ``since`` until ``until`` (the
    earliest expiry among them; None: none expires, or the filter ignores expiry)."""

    __slots__ = ("ids", "keys", "mark", "since", "until")

    def __init__(
        self,
        mark: tuple[str | None, int],
        keys: list[int],
        ids: list[str],
        since: str | None,
        until: str | None,
    ) -> None:
        self.mark, self.keys, self.ids, self.since, self.until = mark, keys, ids, since, until

    def covers(self, now: str | None) -> bool:
        """Whether the rows are those the filter passes at ``now`` (stored text)."""
        if now is None or self.since is None:
            return now is None and self.since is None
        return self.since <= now and (self.until is None or now < self.until)


class IsolatedCache:
    """The :class:`VisibleState` of each set of namespaces, the least recently used
    dropped while they hold more than ``budget`` rows together."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._states: OrderedDict[tuple[str, ...], VisibleState] = OrderedDict()
        self._lock = threading.Lock()

    def state(self, namespaces: Sequence[str]) -> VisibleState:
        key = tuple(sorted(set(namespaces)))
        with self._lock:
            found = self._states.get(key)
            if found is None:
                found = self._states[key] = VisibleState()
            else:
                self._states.move_to_end(key)
            self._trim()
            return found

    def _trim(self) -> None:
        """Drop the least recently used states (never the newest) while there are more
        than :data:`MAX_STATES` or they hold more than :attr:`budget` rows."""
        total = sum(state.held() for state in self._states.values())
        while len(self._states) > 1 and (total > self.budget or len(self._states) > MAX_STATES):
            _, oldest = self._states.popitem(last=False)
            total -= oldest.held()

    def clear(self) -> None:
        with self._lock:
            self._states.clear()

    def __len__(self) -> int:
        return len(self._states)


def cache_of(store: Any, budget: int) -> IsolatedCache:
    """``store``'s cache, made on first use (once, whichever thread gets there first)."""
    cache: IsolatedCache | None = store.__dict__.get("_isolated_cache")
    if cache is None:
        cache = store.__dict__.setdefault("_isolated_cache", IsolatedCache(budget))
    return cache
