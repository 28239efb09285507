"""LangGraph's long-term memory store on memchentic (issue 24, item 4).

:class:`MemchenticStore` is a :class:`langgraph.store.base.BaseStore`: a graph,
``create_react_agent`` or LangMem's memory tools read and write it with ``put``,
``get``, ``search``, ``delete`` and ``list_namespaces`` (and their ``a`` twins),
and every one of those calls runs through the public :class:`~memchentic.Memory`
API, under the access rules of the memory it was given::

    from memchentic import Memory
    from memchentic.integrations.langgraph import MemchenticStore

    store = MemchenticStore(Memory().as_identity("alice"), index={"fields": ["text"]})
    store.put(("notes", "work"), "n1", {"text": "The deploy is on Thursday"})
    store.search(("notes",), query="when do we deploy?")

How a LangGraph item is kept (``docs/integrations.md`` says the same for users):

* One store lives in one memchentic namespace (the caller's own by default).
* An item (namespace tuple, key, value) is one memory. Its ``metadata["langgraph"]``
  holds the namespace, the key and the JSON value; its content is the text to
  embed: the value's indexed fields (by default the whole value as JSON); when a
  put names none and the store's find no text, the value's ``content`` (what
  LangMem's tools write); else the key, tagged as unindexed.
* Its ``slot_key`` is a digest of (namespace, key), so a second ``put`` is a slot
  update: the same memory, ``created_at`` kept, ``updated_at`` moved. ``put`` with
  ``None`` and ``delete`` run ``Memory.delete``.
* Its tags (digests: every prefix of its namespace, its key, ``langgraph``) let
  ``get``, ``search`` and ``list_namespaces`` ask the store for only the
  memories they need; the metadata is checked on every read, so a digest that
  matches by chance costs a row, never a wrong answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from itertools import islice, takewhile
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        "memchentic.integrations.langgraph needs LangGraph: pip install 'memchentic[langgraph]'"
    ) from exc

from .. import validation as check
from ..access.namespaces import scope_namespace
from ..aio import AsyncMemory
from ..errors import ValidationError
from ..memory import Memory
from ..record import MemoryRecord

__all__ = ["ITEM_TAG", "METADATA_KEY", "MemchenticStore"]

#: The metadata key of a memory that holds a LangGraph item.
METADATA_KEY = "langgraph"
#: The tag every LangGraph item carries.
ITEM_TAG = "langgraph"
#: Tags of the prefixes of an item's namespace, of its (namespace, key), and of an
#: item that is not indexed (``index=False``, or no text at the indexed fields).
_PREFIX_TAG = "langgraph:ns:"
_KEY_TAG = "langgraph:key:"
_UNINDEXED_TAG = "langgraph:unindexed"
#: Hex digits of a digest in a tag (a chance match is only a row read for nothing).
_TAG_DIGITS = 24
_SLOT_PREFIX = "langgraph:"
_OPERATIONS = (GetOp, PutOp, SearchOp, ListNamespacesOp)
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le,
}  # fmt: skip
_OPERATORS = frozenset({"$eq", "$ne", *_ORDER})
#: Levels of metadata around an item's value (``{"langgraph": {"value": ...}}``).
_WRAPPING = 2

Namespace = tuple[str, ...]


class MemchenticStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memchentic memories.

    :param memory: the :class:`~memchentic.Memory` (or :class:`~memchentic.AsyncMemory`)
        to keep the items in; an ``as_identity`` view keeps its access rules.
    :param namespace: the memchentic namespace of every item (``user:alice``,
        ``group:core``); or ``user_id=`` / ``agent_id=``, as on ``Memory.add``.
        At most one of the three; none: the caller's own namespace (an identity's
        private one; the trusted principal's ``user:DEFAULT_USER_ID``).
    :param index: LangGraph's index config; only ``fields`` is used (the JSON paths
        whose text is embedded, default ``["$"]``: the whole value). memchentic
        embeds with the memory's embedder, so ``dims`` and ``embed`` are ignored.
    :param type: the memchentic type of the items' memories (default: the default type).
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        namespace: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        index: Mapping[str, Any] | None = None,
        type: str | None = None,  # noqa: A002 - Memory.add's name
    ) -> None:
        engine = memory.sync if isinstance(memory, AsyncMemory) else memory
        if not isinstance(engine, Memory):
            raise ValidationError("memory", "must be a memchentic Memory or AsyncMemory")
        #: The memory every call runs on.
        self.memory: Memory = engine
        #: The memchentic namespace that holds this store's items.
        self.namespace: str = _store_namespace(engine, namespace, user_id, agent_id)
        #: The JSON paths embedded when a put does not say (``index=``).
        self.index_fields: list[str] = _index_fields(index)
        self._type = type

    # --- BaseStore ---------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; every op is checked before any runs. Consecutive puts
        go to memchentic as one ``add_many`` (one embedding batch); of several puts of
        one (namespace, key) there, the last wins."""
        todo = list(ops)
        settings = self.memory.settings
        # a value is kept two levels down in the memory's metadata (langgraph.value)
        nesting = (settings.max_metadata_depth - _WRAPPING, settings.max_metadata_bytes)
        for op in todo:
            _check(op, nesting)
        results: list[Result] = [None] * len(todo)
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for i, op in enumerate(todo):
            if isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)
                puts[op.namespace, op.key] = op
                continue
            self._apply(list(puts.values()))
            puts.clear()
            results[i] = self._read(op)
        self._apply(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread, as :class:`~memchentic.AsyncMemory` runs
        every call: the event loop never waits on the store or the embedder."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- reads -------------------------------------------------------------------------
    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            record = self._find(op.namespace, op.key)
            return None if record is None else Item(**_item_fields(record))
        if isinstance(op, SearchOp):
            return self._search(op)
        assert isinstance(op, ListNamespacesOp)
        return self._list_namespaces(op)

    def _find(self, namespace: Namespace, key: str) -> MemoryRecord | None:
        for record in self._listed([_key_tag(namespace, key)]):
            if _address(record) == (namespace, key):
                return record
        return None

    def _listed(self, tags: list[str]) -> Iterator[MemoryRecord]:
        """This store's memories carrying ``tags``, oldest first (a page at a time)."""
        page = self.memory.settings.list_max_limit
        offset = 0
        while True:
            records = self.memory.list(
                namespace=self.namespace, tags=tags, include_expired=True,
                include_superseded=True, newest_first=False, limit=page, offset=offset,
            )  # fmt: skip
            yield from records
            if len(records) < page:
                return
            offset += page

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix
        tag = _prefix_tag(prefix) if prefix else ITEM_TAG
        if op.limit == 0:
            return []

        def wanted(record: MemoryRecord) -> bool:
            found = _stored(record)
            return (
                found is not None
                and found[0][: len(prefix)] == prefix
                and _matches(found[2], op.filter)
            )

        if not op.query:  # a listing, oldest first
            listed = (r for r in self._listed([tag]) if wanted(r))
            return [_item(r) for r in islice(listed, op.offset, op.offset + op.limit)]
        most = self.memory.settings.search_max_limit
        hits = self.memory.search(
            op.query, namespace=self.namespace, tags=[tag],
            limit=min(most, most if op.filter else op.offset + op.limit),
            include_expired=True, include_superseded=True,
        )  # fmt: skip
        ranked = [h for h in hits if _UNINDEXED_TAG not in h.memory.tags and wanted(h.memory)]
        out = [_item(h.memory, h.score) for h in ranked[op.offset : op.offset + op.limit]]
        if len(out) < op.limit:  # as LangGraph's stores do: unindexed items fill, unscored
            rest = (r for r in self._listed([tag, _UNINDEXED_TAG]) if wanted(r))
            out.extend(_item(r) for r in islice(rest, op.limit - len(out)))
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        conditions = tuple(op.match_conditions or ())
        tag = ITEM_TAG
        for condition in conditions:  # the store narrows by the first fixed prefix
            fixed = tuple(takewhile(lambda label: label != "*", condition.path))
            if condition.match_type == "prefix" and fixed:
                tag = _prefix_tag(fixed)
                break
        found: set[Namespace] = set()
        for record in self._listed([tag]):
            address = _address(record)
            if address is None or not all(_fits(c, address[0]) for c in conditions):
                continue
            found.add(address[0] if op.max_depth is None else address[0][: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    # --- writes ------------------------------------------------------------------------
    def _apply(self, puts: list[PutOp]) -> None:
        """Puts of distinct (namespace, key)s: deletions, then writes in batches."""
        for op in puts:
            if op.value is None:
                record = self._find(op.namespace, op.key)
                if record is not None:
                    self.memory.delete(record.id)
        writes = [op for op in puts if op.value is not None]
        most = self.memory.settings.max_writes_per_call
        for start in range(0, len(writes), most):
            chunk = writes[start : start + most]
            try:
                results = self.memory.add_many([self._as_memory(op) for op in chunk])
            except ValidationError as exc:
                raise _about_value(exc) from exc
            for op, result in zip(chunk, results, strict=True):
                if result.status == "refused":
                    raise ValidationError(
                        "value", f"refused by memchentic ({result.reason})",
                        f"value: the item {op.namespace!r} {op.key!r} was refused by "
                        f"memchentic ({result.reason})",
                    )  # fmt: skip

    def _as_memory(self, op: PutOp) -> dict[str, Any]:
        """The ``Memory.add`` options of one put."""
        assert op.value is not None
        value = dict(op.value)
        texts = _index_texts(value, op.index, self.index_fields)
        tags = [ITEM_TAG, _key_tag(op.namespace, op.key)]
        tags += [_prefix_tag(op.namespace[:n]) for n in range(1, len(op.namespace) + 1)]
        if not texts:
            tags.append(_UNINDEXED_TAG)
        most = self.memory.settings.max_tags
        if len(tags) > most:
            raise ValidationError(
                "namespace", f"at most {most - 3} labels in this store (MAX_TAGS is {most})"
            )
        options: dict[str, Any] = {
            "content": "\n".join(texts) if texts else op.key,
            "metadata": {
                METADATA_KEY: {"namespace": list(op.namespace), "key": op.key, "value": value}
            },
            "slot_key": _SLOT_PREFIX + _digest(op.namespace, op.key),
            "tags": tags,
            "namespace": self.namespace,
            "permanent": True,  # an item lives until it is deleted (no TTL here)
        }
        if self._type is not None:
            options["type"] = self._type
        return options


# --- the mapping ---------------------------------------------------------------------
def _store_namespace(
    memory: Memory, namespace: str | None, user_id: str | None, agent_id: str | None
) -> str:
    given = [name for name, v in (("namespace", namespace), ("user_id", user_id),
                                  ("agent_id", agent_id)) if v is not None]  # fmt: skip
    if len(given) > 1:
        raise ValidationError(given[1], "give one of namespace, user_id or agent_id")
    if not given:
        own = memory.access.default_namespace(memory.principal)
        if own:
            return own
    return scope_namespace(
        namespace=namespace, user_id=user_id, agent_id=agent_id,
        default_user=memory.settings.default_user_id,
    )  # fmt: skip


def _index_fields(index: Mapping[str, Any] | None) -> list[str]:
    if index is None:
        return ["$"]
    if not isinstance(index, Mapping):
        raise ValidationError("index", "must be LangGraph's index config (a dict with fields)")
    fields = index.get("fields") or ["$"]
    if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
        raise ValidationError("index", "fields must be a list of JSON paths")
    return list(fields)


#: The field LangMem's memory tools write (``{"content": ...}``): indexed when the
#: store's own fields find no text in a value, rather than keeping it unindexed.
LANGMEM_FIELD = "content"


def _index_texts(
    value: Mapping[str, Any], index: Sequence[str] | bool | None, default: list[str]
) -> list[str]:
    """The texts at the indexed paths (several for ``[*]``), joined into one memory:
    memchentic keeps one vector per memory. A put that names no paths, in a value
    where the store's paths find no text, has its ``content`` indexed (LangMem's
    items, in a store configured for another shape)."""
    if index is False:
        return []
    paths = default if index is None or index is True else list(index)
    texts = [t for path in paths for t in get_text_at_path(value, path) if t.strip()]
    if not texts and index is None and LANGMEM_FIELD in value:
        texts = [t for t in get_text_at_path(value, LANGMEM_FIELD) if t.strip()]
    return texts


def _digest(namespace: Namespace, key: str | None = None) -> str:
    text = json.dumps([list(namespace), key], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _prefix_tag(namespace: Namespace) -> str:
    return _PREFIX_TAG + _digest(namespace)[:_TAG_DIGITS]


def _key_tag(namespace: Namespace, key: str) -> str:
    return _KEY_TAG + _digest(namespace, key)[:_TAG_DIGITS]


def _stored(record: MemoryRecord) -> tuple[Namespace, str, dict[str, Any]] | None:
    """(namespace, key, value) of the item a memory holds; ``None``: not an item."""
    held = record.metadata.get(METADATA_KEY)
    if not isinstance(held, dict):
        return None
    namespace, key, value = held.get("namespace"), held.get("key"), held.get("value")
    if not isinstance(namespace, list) or not isinstance(key, str) or not isinstance(value, dict):
        return None
    return tuple(str(label) for label in namespace), key, value


def _address(record: MemoryRecord) -> tuple[Namespace, str] | None:
    found = _stored(record)
    return None if found is None else (found[0], found[1])


def _item_fields(record: MemoryRecord) -> dict[str, Any]:
    found = _stored(record)
    assert found is not None
    created = _time(record.created_at, record.updated_at)
    return {"namespace": found[0], "key": found[1], "value": found[2], "created_at": created,
            "updated_at": _time(record.updated_at, created)}  # fmt: skip


def _item(record: MemoryRecord, score: float | None = None) -> SearchItem:
    return SearchItem(**_item_fields(record), score=score)


def _time(value: datetime | None, fallback: datetime | None) -> datetime:
    out = value or fallback
    assert out is not None, "a stored memory has its times"
    return out


# --- filters and match conditions ----------------------------------------------------
def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: every key's condition holds (an exact value, a nested
    dict of conditions, or operators ``$eq $ne $gt $gte $lt $lte``)."""
    return not flt or all(_holds(value.get(k), want) for k, want in flt.items())


def _holds(got: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_compare(got, op, operand) for op, operand in want.items())
        return isinstance(got, Mapping) and all(_holds(got.get(k), v) for k, v in want.items())
    return _same(got, want)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _compare(got: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _same(got, operand)
    if op == "$ne":
        return not _same(got, operand)
    if _number(got) and _number(operand):
        return _ORDER[op](float(got), float(operand))
    if isinstance(got, str) and isinstance(operand, str):
        return _ORDER[op](got, operand)
    return False  # a missing field or another type is never greater, nor smaller


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fits(condition: MatchCondition, namespace: Namespace) -> bool:
    """LangGraph's match condition: ``path`` (``*`` matches any label) is a prefix or
    a suffix of ``namespace``."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True)) if path else True


# --- checks --------------------------------------------------------------------------
def _check(op: Any, nesting: tuple[int, int]) -> None:
    """Refuse a malformed op before anything runs, naming its field. ``nesting``: how
    deep (and how large) a value or a filter may be, checked before anything
    recursive walks it (a value 3,000 deep would exhaust Python's stack)."""
    if not isinstance(op, _OPERATIONS):
        raise ValidationError("op", f"must be GetOp, PutOp, SearchOp or ListNamespacesOp, "
                                    f"got {type(op).__name__}")  # fmt: skip
    if isinstance(op, SearchOp) and isinstance(op.filter, Mapping):
        _within(op.filter, "filter", *nesting)
    if isinstance(op, PutOp) and isinstance(op.value, Mapping):
        _within(op.value, "value", *nesting)
    if isinstance(op, GetOp | PutOp):
        _check_namespace(op.namespace, "namespace")
        if not isinstance(op.key, str) or not op.key:
            raise ValidationError("key", "must be a non-empty string")
    if isinstance(op, SearchOp):
        _check_namespace(op.namespace_prefix, "namespace_prefix")
        _check_filter(op.filter)
        _check_page(op.limit, op.offset)
        if op.query is not None and not isinstance(op.query, str):
            raise ValidationError("query", "must be a string or None")
    if isinstance(op, ListNamespacesOp):
        _check_conditions(op.match_conditions)
        _check_page(op.limit, op.offset)
        if op.max_depth is not None and (not _whole(op.max_depth) or op.max_depth < 1):
            raise ValidationError("max_depth", "must be a whole number >= 1 or None")
    validate_op_namespace(op)
    if isinstance(op, PutOp):
        _check_put(op)


def _within(value: Mapping[str, Any], field: str, depth_limit: int, size_limit: int) -> None:
    """Refuse dicts and lists nested deeper than ``depth_limit`` or holding more than
    ``size_limit`` values, walked without recursion."""
    rule = f"MAX_METADATA_DEPTH less the {_WRAPPING} levels that hold an item"
    check.nested_within(value, field, depth_limit, size_limit, rule)


def _check_put(op: PutOp) -> None:
    if not op.namespace:
        raise InvalidNamespaceError("namespace: must not be empty")
    if op.ttl is not None:
        raise NotImplementedError("ttl: MemchenticStore does not expire items (ttl=None)")
    if op.value is not None:
        if not isinstance(op.value, Mapping):
            raise ValidationError("value", f"must be a dict (None deletes), got "
                                           f"{type(op.value).__name__}")  # fmt: skip
        try:
            json.dumps(dict(op.value), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError("value", f"must be JSON-serialisable ({exc})") from exc
    index = op.index
    if not (index is None or index is False or (
        isinstance(index, list) and all(isinstance(p, str) and p for p in index)
    )):  # fmt: skip
        raise ValidationError("index", "must be None, False or a list of JSON paths")


def _check_namespace(namespace: Any, field: str) -> None:
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(
            f"{field}: must be a tuple of strings, got {type(namespace).__name__}"
        )


def _check_filter(flt: Any) -> None:
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise ValidationError("filter", "must be a dict or None")
    for want in flt.values():
        if isinstance(want, Mapping):
            unknown = [k for k in want if str(k).startswith("$") and k not in _OPERATORS]
            if unknown:
                raise ValidationError(
                    "filter", f"unknown operator {unknown[0]!r}; use $eq, $ne, $gt, $gte, "
                              "$lt or $lte",
                )  # fmt: skip
            if any(str(k).startswith("$") for k in want) and not all(
                str(k).startswith("$") for k in want
            ):
                raise ValidationError("filter", "a condition mixes operators and fields")
            if not any(str(k).startswith("$") for k in want):
                _check_filter(want)


def _check_conditions(conditions: Any) -> None:
    for condition in conditions or ():
        if not isinstance(condition, MatchCondition) or condition.match_type not in (
            "prefix", "suffix"
        ):  # fmt: skip
            raise ValidationError("match_conditions", "each must be a MatchCondition of "
                                                      "match_type prefix or suffix")  # fmt: skip
        _check_namespace(condition.path, "match_conditions.path")


def _check_page(limit: Any, offset: Any) -> None:
    if not _whole(limit) or limit < 0:
        raise ValidationError("limit", "must be a whole number >= 0")
    if not _whole(offset) or offset < 0:
        raise ValidationError("offset", "must be a whole number >= 0")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _about_value(exc: ValidationError) -> ValidationError:
    """memchentic's error about the memory's metadata or content is one about the value."""
    if exc.field not in ("metadata", "content"):
        return exc
    return ValidationError("value", exc.rule, f"value: {exc.rule} (as the memory's {exc.field})")
