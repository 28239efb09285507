"""The I/O-free half of the HTTP clients: the request of every remote operation and
how its answer becomes the library's types.

Each function here is named after the operation it serves and returns a
:class:`Call`: method, path, query and JSON body, and the decoder of the answer.
:class:`~memchentic.Client` and :class:`~memchentic.AsyncClient` only send a call
and hand the response to :meth:`Call.finish`, so no request or decoding is
written twice (the split httpx makes between ``BaseClient`` and its two
subclasses). Nothing here imports ``httpx`` at run time.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote

from .. import args as a
from .. import wire
from ..choices import TEAM_KINDS
from ..clock import as_utc
from ..context.model import Context
from ..errors import ValidationError
from ..identity import Grant, Identity, Invitation, Membership, Team
from ..record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from ..reports import Answer, ConsolidationReport, MaintenanceReport, Neighbour

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0


def _raw(data: Any) -> Any:
    return data


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and the decoder of its answer."""

    method: str
    path: str
    decode: Callable[[Any], T] = _raw
    params: Mapping[str, Any] = field(default_factory=dict)
    #: The JSON body; None sends none.
    body: Any = None

    @classmethod
    def answered(cls, value: T) -> Call[T]:
        """A call the client answers without asking the server (an empty batch)."""
        return cls("", "", lambda _: value)

    @property
    def local(self) -> bool:
        return not self.method

    def request(self) -> dict[str, Any]:
        """Keyword arguments for ``httpx.Client.request`` (and ``AsyncClient.request``)."""
        params = {k: _encode(v) if isinstance(v, datetime) else v
                  for k, v in self.params.items() if v is not None}  # fmt: skip
        found: dict[str, Any] = {"method": self.method, "url": self.path, "params": params}
        if self.body is not None:
            found["content"] = json.dumps(self.body, default=_encode, ensure_ascii=False).encode()
            found["headers"] = {"Content-Type": "application/json"}
        return found

    def finish(self, response: httpx.Response) -> T:
        """The answer as the library's type, or the library's exception for an error."""
        check(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return self.decode(response.json())
        return self.decode(response.text)


def check(response: httpx.Response) -> None:
    """Raise the library's exception for an error answer (the body must have been read)."""
    if response.status_code >= 400:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        raise wire.error(response.status_code, payload)


class BaseClient:
    """What both clients hold: the server, the key's header and the timeout."""

    def __init__(self, url: str, api_key: str | None, timeout: float) -> None:
        self.url = url.rstrip("/")
        self._options: dict[str, Any] = {
            "base_url": self.url,
            "headers": {"Authorization": f"Bearer {api_key}"} if api_key else {},
            "timeout": timeout,
        }


# --- the live event stream and the export (streamed answers) ---------------------------
def stream_events(*, since: str | None = None, types: Sequence[str] | None = None) -> Call[None]:
    """``GET /v1/events`` (server-sent events); read it with :class:`EventLines`."""
    return Call("GET", "/v1/events", params={"since": since or None, "type": _listed(types)})


class EventLines:
    """Server-sent event lines in, the library's :class:`~memchentic.record.Event` out."""

    def __init__(self) -> None:
        self._data: builtins.list[str] = []

    def feed(self, line: str) -> Event | None:
        """The event that ``line`` completes, if any."""
        if line.startswith("data:"):
            self._data.append(line[5:].strip())
        elif not line and self._data:
            found = wire.event(json.loads("\n".join(self._data)))
            self._data = []
            return found
        return None


def export(*, vectors: bool = False) -> Call[None]:
    """``GET /v1/export`` (JSON Lines); write each line with :func:`write_line`."""
    return Call("GET", "/v1/export", params={"vectors": vectors})


def write_line(line: str, target: IO[str]) -> int:
    """Write one exported line to ``target``; 1, or 0 for the blank between records."""
    if not line:
        return 0
    target.write(line + "\n")
    return 1


# --- writes ----------------------------------------------------------------------------
def add(args: a.AddArgs) -> Call[WriteResult]:
    return Call("POST", "/v1/memories", wire.write_result, body=_given(args))


def add_many(args: a.AddManyArgs) -> Call[builtins.list[WriteResult]]:
    common = _given(args, "items")
    batch = [{**common, **({"content": i} if isinstance(i, str) else dict(i))}
             for i in args.items]  # fmt: skip
    if not batch:
        return Call.answered([])
    return Call("POST", "/v1/memories/batch", _each(wire.write_result), body={"items": batch})


def revise(memory_id: str, content: str | None = None, **changes: Any) -> Call[WriteResult]:
    body = {**changes, **({"content": content} if content is not None else {})}
    return Call("PATCH", f"/v1/memories/{_seg(memory_id)}", wire.write_result, body=body)


def improve(args: a.ImproveArgs) -> Call[WriteResult]:
    return Call("POST", f"/v1/memories/{_seg(args.memory_id)}/improve", wire.write_result,
                body=_given(args, "memory_id"))  # fmt: skip


def delete(memory_id: str) -> Call[WriteResult]:
    return Call("DELETE", f"/v1/memories/{_seg(memory_id)}", wire.write_result)


def delete_all(**scope: str | None) -> Call[int]:
    body = {k: v for k, v in scope.items() if v is not None}
    return Call("POST", "/v1/memories/delete_all", _count, body=body)


def _count(data: Any) -> int:
    return int(data["deleted"])


def pin(memory_id: str) -> Call[WriteResult]:
    return Call("POST", f"/v1/memories/{_seg(memory_id)}/pin", wire.write_result)


def unpin(memory_id: str) -> Call[WriteResult]:
    return Call("POST", f"/v1/memories/{_seg(memory_id)}/unpin", wire.write_result)


def restore(memory_id: str) -> Call[WriteResult]:
    return Call("POST", f"/v1/memories/{_seg(memory_id)}/restore", wire.write_result)


def manage(args: a.ManageArgs) -> Call[builtins.list[WriteResult]]:
    body = {**_given(args), "operations": [dict(op) for op in args.operations]}
    return Call("POST", "/v1/manage", _each(wire.write_result), body=body)


# --- reads -----------------------------------------------------------------------------
def search(args: a.SearchArgs) -> Call[builtins.list[SearchHit]]:
    return Call("POST", "/v1/search", _each(wire.hit), body=_given(args))


def recall(args: a.RecallArgs) -> Call[builtins.list[SearchHit]]:
    return Call("POST", "/v1/recall", _each(wire.hit), body=_given(args))


def get(memory_id: str, *, touch: bool = True) -> Call[MemoryRecord]:
    return Call("GET", f"/v1/memories/{_seg(memory_id)}", wire.record, params={"touch": touch})


def list_memories(args: a.ListArgs) -> Call[builtins.list[MemoryRecord]]:
    """``list`` (named so here to leave the builtin alone)."""
    params = _given(args, "type", "tags", "filters")
    if args.filters is not None:  # a query string holds it as JSON
        params["filters"] = json.dumps(args.filters, default=_encode)
    params |= {"type": _listed(args.type), "tag": args.tags}
    return Call("GET", "/v1/memories", _each(wire.record), params=params)


def history(memory_id: str) -> Call[builtins.list[Version]]:
    return Call("GET", f"/v1/memories/{_seg(memory_id)}/history", _each(wire.version))


# --- graph -----------------------------------------------------------------------------
def relate(
    source: str, target: str, kind: str, strength: float = 1.0, *,
    metadata: Mapping[str, Any] | None = None,
) -> Call[Edge]:  # fmt: skip
    body = {"source": source, "target": target, "kind": kind, "strength": strength,
            "metadata": dict(metadata) if metadata is not None else None}  # fmt: skip
    return Call("POST", "/v1/edges", wire.edge, body=body)


def delete_edge(edge_id: str) -> Call[bool]:
    return Call("DELETE", f"/v1/edges/{_seg(edge_id)}", _deleted)


def edges(memory_id: str, *, kind: str | None = None) -> Call[builtins.list[Edge]]:
    return Call("GET", f"/v1/memories/{_seg(memory_id)}/edges", _each(wire.edge),
                params={"kind": kind})  # fmt: skip


def neighbors(memory_id: str, depth: int = 1, *, limit: int = 50) -> Call[builtins.list[Neighbour]]:
    return Call("GET", f"/v1/memories/{_seg(memory_id)}/neighbors", _each(wire.neighbour),
                params={"depth": depth, "limit": limit})  # fmt: skip


def entities(args: a.EntitiesArgs) -> Call[dict[str, Any]]:
    return Call("GET", "/v1/entities", params=_given(args))


def ask(args: a.AskArgs) -> Call[Answer]:
    return Call("POST", "/v1/ask", wire.answer, body=_given(args))


def consolidate(args: a.ConsolidateArgs) -> Call[ConsolidationReport]:
    return Call("POST", "/v1/consolidate", wire.consolidation_report, body=_given(args))


# --- sessions --------------------------------------------------------------------------
def record_turn(args: a.RecordTurnArgs) -> Call[Turn]:
    return Call("POST", "/v1/turns", wire.turn, body=_given(args))


def add_message(args: a.AddMessageArgs) -> Call[Turn]:
    message = args.message
    if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
        raise ValidationError("message", "must be a mapping with 'role' and 'content'")
    options = _given(args, "message")
    if "metadata" in message:
        options.setdefault("metadata", message["metadata"])
    return record_turn(a.RecordTurnArgs(message["role"], message["content"], **options))


def get_history(args: a.GetHistoryArgs) -> Call[builtins.list[Turn]]:
    return Call("GET", "/v1/turns", _each(wire.turn), params=_given(args))


def list_sessions(args: a.ListSessionsArgs) -> Call[builtins.list[tuple[str, int]]]:
    def decode(found: Any) -> builtins.list[tuple[str, int]]:
        return [(s["session_id"], s["turns"]) for s in found]

    return Call("GET", "/v1/sessions", decode, params=_given(args))


def summarize_session(args: a.SummarizeSessionArgs) -> Call[WriteResult]:
    return Call("POST", "/v1/sessions/summarize", wire.write_result, body=_given(args))


def add_working(args: a.AddWorkingArgs) -> Call[WriteResult]:
    return Call("POST", "/v1/working", wire.write_result, body=_given(args))


def working_memory(
    session_id: str | None = None, *, user_id: str | None = None, agent_id: str | None = None,
    namespace: str | None = None, limit: int | None = None,
) -> Call[builtins.list[MemoryRecord]]:  # fmt: skip
    params = {"session_id": session_id, "user_id": user_id, "agent_id": agent_id,
              "namespace": namespace, "limit": limit}  # fmt: skip
    return Call("GET", "/v1/working", _each(wire.record), params=params)


# --- context and learning --------------------------------------------------------------
def context(args: a.ContextArgs) -> Call[Context]:
    return Call("POST", "/v1/context", wire.context, body=_given(args))


def learn(args: a.LearnArgs) -> Call[builtins.list[WriteResult]]:
    messages: Any = args.messages
    if not isinstance(messages, str):
        messages = [m.to_dict() if isinstance(m, Turn) else m for m in messages]
    return Call("POST", "/v1/learn", _each(wire.write_result),
                body={**_given(args), "messages": messages})  # fmt: skip


# --- upkeep and events -----------------------------------------------------------------
def stats(args: a.StatsArgs) -> Call[dict[str, Any]]:
    return Call("GET", "/v1/stats", params=_given(args))


def gc(*, dry_run: bool = False) -> Call[dict[str, Any]]:
    return Call("POST", "/v1/gc", body={"dry_run": dry_run})


def reset() -> Call[int]:
    return Call("POST", "/v1/reset", _count)


def maintain(*, dry_run: bool = False) -> Call[MaintenanceReport]:
    return Call("POST", "/v1/maintain", wire.maintenance_report, body={"dry_run": dry_run})


def events(
    *, since: str | None = None, types: Sequence[str] | None = None, limit: int = 100
) -> Call[builtins.list[Event]]:
    params = {"since": since, "type": _listed(types), "limit": limit}
    return Call("GET", "/v1/events/log", _each(wire.event), params=params)


def me() -> Call[dict[str, Any]]:
    return Call("GET", "/v1/me")


# --- the directory ---------------------------------------------------------------------
def identities(kind: str | None = None) -> Call[builtins.list[Identity]]:
    return Call("GET", "/v1/identities", _each(_model(Identity)), params={"kind": kind})


def create_identity(name: str, kind: str = "user") -> Call[Identity]:
    return Call("POST", "/v1/identities", _model(Identity), body={"name": name, "kind": kind})


def rename_identity(key: str, new_name: str) -> Call[Identity]:
    return Call("PATCH", f"/v1/identities/{_seg(key)}", _model(Identity), body={"name": new_name})


def teams(kind: str) -> Call[builtins.list[Team]]:
    return Call("GET", f"/v1/{_plural(kind)}", _each(_model(Team)))


def create_team(
    kind: str, name: str, admins: Sequence[str] | None, members: Sequence[str] | None
) -> Call[Team]:
    body = {"name": name, "admins": _names(admins), "members": _names(members)}
    return Call("POST", f"/v1/{_plural(kind)}", _model(Team), body=body)


def rename_team(team: str, new_name: str) -> Call[Team]:
    return Call("PATCH", _team_path(team), _model(Team), body={"name": new_name})


def members(team: str) -> Call[builtins.list[Membership]]:
    return Call("GET", _team_path(team) + "/members", _each(_model(Membership)))


def add_member(
    team: str, identity: str, *, role: str = "member", active: bool = True
) -> Call[Membership | Invitation]:
    def decode(data: Any) -> Membership | Invitation:
        found = dict(data)
        if found.pop("status", "member") == "invited":
            return _model(Invitation)(found)
        return _model(Membership)(found)

    body = {"identity": identity, "role": role, "active": active}
    return Call("POST", _team_path(team) + "/members", decode, body=body)


def invitations(
    *, kind: str | None = None, limit: int | None = None, offset: int = 0
) -> Call[builtins.list[Invitation]]:
    params = _present({"kind": kind, "limit": limit, "offset": offset or None})
    return Call("GET", "/v1/invitations", _each(_model(Invitation)), params=params)


def team_invitations(
    team: str, *, limit: int | None = None, offset: int = 0
) -> Call[builtins.list[Invitation]]:
    params = _present({"limit": limit, "offset": offset or None})
    path = _team_path(team) + "/invitations"
    return Call("GET", path, _each(_model(Invitation)), params=params)


def withdraw(team: str, identity: str) -> Call[bool]:
    return Call("DELETE", _team_path(team) + f"/invitations/{_seg(identity)}", _deleted)


def accept(team: str) -> Call[Membership]:
    def decode(data: Any) -> Membership:
        found = dict(data)
        found.pop("status", None)
        return _model(Membership)(found)

    return Call("POST", _team_path(team) + "/accept", decode)


def decline(team: str) -> Call[bool]:
    return Call("POST", _team_path(team) + "/decline", _deleted)


def remove_member(team: str, identity: str) -> Call[bool]:
    return Call("DELETE", _team_path(team) + f"/members/{_seg(identity)}", _deleted)


def grant(namespace: str, grantee: str) -> Call[Grant]:
    body = {"namespace": namespace, "grantee": grantee}
    return Call("POST", "/v1/grants", _model(Grant), body=body)


def revoke(namespace: str, grantee: str) -> Call[bool]:
    body = {"namespace": namespace, "grantee": grantee}
    return Call("POST", "/v1/grants/revoke", _deleted, body=body)


def grants(namespace: str | None = None) -> Call[builtins.list[Grant]]:
    return Call("GET", "/v1/grants", _each(_model(Grant)), params={"namespace": namespace})


# --- helpers ---------------------------------------------------------------------------
def _each(decode: Callable[[Any], T]) -> Callable[[Any], builtins.list[T]]:
    def decode_all(found: Any) -> builtins.list[T]:
        return [decode(item) for item in found]

    return decode_all


def _deleted(found: Any) -> bool:
    return bool(found["deleted"])


def _model(cls: type[T]) -> Callable[[Any], T]:
    """A directory record (``Identity``, ``Team``...) from its JSON form."""

    def decode(data: Any) -> T:
        values = dict(data)
        if "created_at" in values:
            values["created_at"] = as_utc(values["created_at"])
        return cls(**values)

    return decode


def _given(args: a.Args, *leave: str) -> dict[str, Any]:
    """An operation's arguments as a request's body or query: those given (an option
    left out, a ``None`` meaning "the server's default"), less ``leave``."""
    return {k: v for k, v in args.kwargs().items() if v is not None and k not in leave}


def _present(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _seg(value: str) -> str:
    """A path segment (ids are plain, but never trust that)."""
    if not isinstance(value, str) or not value:
        raise ValidationError("id", "must be a non-empty string")
    return quote(value, safe="")


def _encode(value: Any) -> Any:
    """JSON for what the library accepts beyond JSON: datetimes (``as_of=datetime(...)``),
    tuples and sets of tags."""
    if isinstance(value, datetime):
        return (as_utc(value) or value).isoformat()
    if isinstance(value, tuple | set | frozenset):
        return builtins.list(value)
    raise TypeError(f"cannot send {type(value).__name__} as JSON")


def _listed(values: str | Sequence[str] | None) -> builtins.list[str] | None:
    if values is None:
        return None
    return [values] if isinstance(values, str) else builtins.list(values)


def _names(values: Sequence[str] | None) -> builtins.list[str]:
    return builtins.list(values or [])


def _plural(kind: str) -> str:
    if kind not in TEAM_KINDS:
        raise ValidationError("kind", "must be 'group' or 'org'")
    return kind + "s"


def _team_path(team: str) -> str:
    kind, _, name = team.partition(":")
    kind = "group" if kind == "ring" else kind
    if not name or kind not in TEAM_KINDS:
        raise ValidationError("team", "must be group:NAME (or ring:NAME) or org:NAME")
    return f"/v1/{kind}s/{_seg(name)}"
