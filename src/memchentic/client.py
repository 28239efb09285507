"""``Client``: a served memchentic with the methods of :class:`~memchentic.Memory`.

    from memchentic import Client, Memory
    mem = Memory()                                             # embedded
    mem = Client("http://127.0.0.1:8077", api_key="mck_...")   # served: same calls

Calls return the library's own types (``WriteResult``, ``MemoryRecord``,
``SearchHit``, ``Edge``, ``Version``, ``Event``, ``Turn``, ``Context``) and raise
its own exceptions, rebuilt from the JSON ``code`` of an error answer: a memory
you may not see raises ``NotFoundError``, bad input ``ValidationError`` (with
its ``field``); a refused key raises ``AuthError``. Options are passed through
to the server, which checks them as the library does.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from . import wire
from .clock import as_utc
from .context.model import Context
from .errors import ValidationError
from .identity import Grant, Identity, Invitation, Membership, Team
from .record import Edge, Event, MemoryRecord, SearchHit, Turn, Version, WriteResult
from .reports import Neighbour

if TYPE_CHECKING:
    import httpx

DEFAULT_TIMEOUT = 30.0


class Client:
    """The HTTP API of ``memchentic serve``, with the method names of ``Memory``.

    :param url: the server, e.g. ``http://127.0.0.1:8077``.
    :param api_key: a key from ``memchentic keys create`` (calls run as its identity).
    :param timeout: seconds per request.
    :param transport: an ``httpx`` transport (tests, proxies).
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        import httpx  # here, so that ``import memchentic`` stays free of it

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    # --- plumbing -----------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(
        self, method: str, path: str, *, body: Any = None, params: Mapping[str, Any] | None = None
    ) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if body is None:
            response = self._http.request(method, path, params=query)
        else:
            content = json.dumps(body, default=_encode, ensure_ascii=False).encode("utf-8")
            headers = {"Content-Type": "application/json"}
            response = self._http.request(method, path, content=content, headers=headers,
                                          params=query)  # fmt: skip
        if response.status_code >= 400:
            try:
                payload = response.json()
            except ValueError:
                payload = None
            raise wire.error(response.status_code, payload)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    # --- writes -------------------------------------------------------------------------
    def add(self, content: str, **options: Any) -> WriteResult:
        """Remember one memory (options as for :meth:`Memory.add`)."""
        return wire.write_result(self._call("POST", "/v1/memories", body={"content": content,
                                                                           **options}))  # fmt: skip

    remember = add

    def add_many(
        self, items: Iterable[str | Mapping[str, Any]], **common: Any
    ) -> builtins.list[WriteResult]:
        """Remember several memories with one request (and one embedding batch)."""
        batch = [{**common, **({"content": i} if isinstance(i, str) else dict(i))} for i in items]
        if not batch:
            return []
        found = self._call("POST", "/v1/memories/batch", body={"items": batch})
        return [wire.write_result(r) for r in found]

    def revise(self, memory_id: str, content: str | None = None, **changes: Any) -> WriteResult:
        """Edit a memory; moves ``updated_at``."""
        body = {**changes, **({"content": content} if content is not None else {})}
        return wire.write_result(self._call("PATCH", f"/v1/memories/{_seg(memory_id)}", body=body))

    def improve(self, memory_id: str, **changes: Any) -> WriteResult:
        """Adjust confidence, importance or validity without resetting the age."""
        path = f"/v1/memories/{_seg(memory_id)}/improve"
        return wire.write_result(self._call("POST", path, body=changes))

    def delete(self, memory_id: str) -> WriteResult:
        return wire.write_result(self._call("DELETE", f"/v1/memories/{_seg(memory_id)}"))

    forget = delete

    def pin(self, memory_id: str) -> WriteResult:
        return wire.write_result(self._call("POST", f"/v1/memories/{_seg(memory_id)}/pin"))

    def unpin(self, memory_id: str) -> WriteResult:
        return wire.write_result(self._call("POST", f"/v1/memories/{_seg(memory_id)}/unpin"))

    def relate(
        self,
        source: str,
        target: str,
        kind: str,
        strength: float = 1.0,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> Edge:
        body = {"source": source, "target": target, "kind": kind, "strength": strength,
                "metadata": dict(metadata) if metadata is not None else None}  # fmt: skip
        return wire.edge(self._call("POST", "/v1/edges", body=body))

    def delete_edge(self, edge_id: str) -> bool:
        return bool(self._call("DELETE", f"/v1/edges/{_seg(edge_id)}")["deleted"])

    # --- reads --------------------------------------------------------------------------
    def get(self, memory_id: str, *, touch: bool = True) -> MemoryRecord:
        """Open one memory; ``NotFoundError`` also when the key may not see it."""
        found = self._call("GET", f"/v1/memories/{_seg(memory_id)}", params={"touch": touch})
        return wire.record(found)

    def list(
        self,
        *,
        type: str | Sequence[str] | None = None,  # noqa: A002 - the documented name
        tags: Sequence[str] | None = None,
        **filters: Any,
    ) -> builtins.list[MemoryRecord]:
        """Memories in scope, newest first (filters as for :meth:`Memory.list`)."""
        params = {**filters, "type": [type] if isinstance(type, str) else type, "tag": tags}
        if isinstance(params.get("as_of"), datetime):
            params["as_of"] = _encode(params["as_of"])
        return [wire.record(r) for r in self._call("GET", "/v1/memories", params=params)]

    def search(self, query: str, **options: Any) -> builtins.list[SearchHit]:
        """The memories that best answer ``query`` (options as for :meth:`Memory.search`)."""
        found = self._call("POST", "/v1/search", body={"query": query, **options})
        return [wire.hit(h) for h in found]

    def recall(self, *, entity: str, **options: Any) -> builtins.list[SearchHit]:
        found = self._call("POST", "/v1/recall", body={"entity": entity, **options})
        return [wire.hit(h) for h in found]

    def history(self, memory_id: str) -> builtins.list[Version]:
        found = self._call("GET", f"/v1/memories/{_seg(memory_id)}/history")
        return [wire.version(v) for v in found]

    def edges(self, memory_id: str, *, kind: str | None = None) -> builtins.list[Edge]:
        found = self._call("GET", f"/v1/memories/{_seg(memory_id)}/edges", params={"kind": kind})
        return [wire.edge(e) for e in found]

    def neighbors(
        self, memory_id: str, depth: int = 1, *, limit: int = 50
    ) -> builtins.list[Neighbour]:
        path = f"/v1/memories/{_seg(memory_id)}/neighbors"
        found = self._call("GET", path, params={"depth": depth, "limit": limit})
        return [Neighbour(wire.record(n["memory"]), n["depth"], n["via"], n["from"])
                for n in found]  # fmt: skip

    def entities(self, **options: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/entities", params=options)
        return result

    def stats(self, **options: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/stats", params=options)
        return result

    def ask(self, question: str, **options: Any) -> dict[str, Any]:
        """Cited passages (and an answer when the server has a chat model), as a dict."""
        result: dict[str, Any] = self._call("POST", "/v1/ask",
                                            body={"question": question, **options})  # fmt: skip
        return result

    # --- context and sessions ------------------------------------------------------------
    def context(self, query: str | None = None, **options: Any) -> Context:
        """A block of memory for a prompt; ``str(ctx)`` is the prompt text."""
        return wire.context(self._call("POST", "/v1/context", body={"query": query, **options}))

    def record_turn(self, role: str, content: str, **options: Any) -> Turn:
        body = {"role": role, "content": content, **options}
        return wire.turn(self._call("POST", "/v1/turns", body=body))

    def add_message(self, message: Mapping[str, Any], **options: Any) -> Turn:
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise ValidationError("message", "must be a mapping with 'role' and 'content'")
        if "metadata" in message:
            options.setdefault("metadata", message["metadata"])
        return self.record_turn(message["role"], message["content"], **options)

    def get_history(
        self, session_id: str | None = None, limit: int = 50, **scope: Any
    ) -> builtins.list[Turn]:
        params = {"session_id": session_id, "limit": limit, **scope}
        return [wire.turn(t) for t in self._call("GET", "/v1/turns", params=params)]

    def list_sessions(self, **scope: Any) -> builtins.list[tuple[str, int]]:
        found = self._call("GET", "/v1/sessions", params=scope)
        return [(s["session_id"], s["turns"]) for s in found]

    def summarize_session(self, session_id: str | None = None, **options: Any) -> WriteResult:
        body = {"session_id": session_id, **options}
        return wire.write_result(self._call("POST", "/v1/sessions/summarize", body=body))

    def learn(self, messages: Any, **options: Any) -> builtins.list[WriteResult]:
        if not isinstance(messages, str):
            messages = [m.to_dict() if isinstance(m, Turn) else m for m in messages]
        found = self._call("POST", "/v1/learn", body={"messages": messages, **options})
        return [wire.write_result(r) for r in found]

    def manage(
        self, operations: Sequence[Mapping[str, Any]], **scope: Any
    ) -> builtins.list[WriteResult]:
        body = {"operations": [dict(op) for op in operations], **scope}
        return [wire.write_result(r) for r in self._call("POST", "/v1/manage", body=body)]

    # --- events -------------------------------------------------------------------------
    def events(
        self, *, since: str | None = None, types: Sequence[str] | None = None, limit: int = 100
    ) -> builtins.list[Event]:
        """Stored events after ``since`` that this key may see, oldest first."""
        params = {"since": since, "type": _listed(types), "limit": limit}
        return [wire.event(e) for e in self._call("GET", "/v1/events/log", params=params)]

    def stream_events(
        self, *, since: str | None = None, types: Sequence[str] | None = None
    ) -> Iterator[Event]:
        """Events as they happen (server-sent events), until the caller stops iterating.
        ``since`` resumes after that event id (``"0"``: the whole log first)."""
        params = {k: v for k, v in {"since": since, "type": _listed(types)}.items() if v}
        with self._http.stream("GET", "/v1/events", params=params, timeout=None) as response:
            if response.status_code >= 400:
                response.read()
                raise wire.error(response.status_code, _json_or_none(response))
            data: builtins.list[str] = []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    yield wire.event(json.loads("\n".join(data)))
                    data = []

    # --- upkeep -------------------------------------------------------------------------
    def consolidate(self, **options: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/consolidate", body=options)
        return result

    def gc(self, *, dry_run: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/gc", body={"dry_run": dry_run})
        return result

    def maintain(self, *, dry_run: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/maintain", body={"dry_run": dry_run})
        return result

    def export(self, target: str | Path | IO[str], *, vectors: bool = False) -> int:
        """Write every memory this key can read as JSON Lines; returns the lines written."""
        if isinstance(target, str | Path):
            with open(target, "w", encoding="utf-8") as handle:
                return self.export(handle, vectors=vectors)
        count = 0
        with self._http.stream("GET", "/v1/export", params={"vectors": vectors}) as response:
            if response.status_code >= 400:
                response.read()
                raise wire.error(response.status_code, _json_or_none(response))
            for line in response.iter_lines():
                if line:
                    target.write(line + "\n")
                    count += 1
        return count

    def me(self) -> dict[str, Any]:
        """The key's record and the namespaces it can read."""
        result: dict[str, Any] = self._call("GET", "/v1/me")
        return result

    @property
    def directory(self) -> RemoteDirectory:
        """Identities, groups, orgs and grants, as this key may manage them."""
        return RemoteDirectory(self)


class RemoteDirectory:
    """The methods of :class:`~memchentic.access.directory.Directory`, over HTTP."""

    def __init__(self, client: Client) -> None:
        self._call = client._call

    def identities(self, kind: str | None = None) -> list[Identity]:
        return [_model(Identity, i) for i in self._call("GET", "/v1/identities",
                                                         params={"kind": kind})]  # fmt: skip

    def create_identity(self, name: str, kind: str = "user") -> Identity:
        body = {"name": name, "kind": kind}
        return _model(Identity, self._call("POST", "/v1/identities", body=body))

    def rename_identity(self, key: str, new_name: str) -> Identity:
        path = f"/v1/identities/{_seg(key)}"
        return _model(Identity, self._call("PATCH", path, body={"name": new_name}))

    def teams(self, kind: str) -> list[Team]:
        return [_model(Team, t) for t in self._call("GET", f"/v1/{_plural(kind)}")]

    def create_group(
        self, name: str, *, admins: list[str] | None = None, members: list[str] | None = None
    ) -> Team:
        body = {"name": name, "admins": admins or [], "members": members or []}
        return _model(Team, self._call("POST", "/v1/groups", body=body))

    def create_org(
        self, name: str, *, admins: list[str] | None = None, members: list[str] | None = None
    ) -> Team:
        body = {"name": name, "admins": admins or [], "members": members or []}
        return _model(Team, self._call("POST", "/v1/orgs", body=body))

    def rename_team(self, team: str, new_name: str) -> Team:
        return _model(Team, self._call("PATCH", _team_path(team), body={"name": new_name}))

    def members(self, team: str) -> list[Membership]:
        return [_model(Membership, m) for m in self._call("GET", _team_path(team) + "/members")]

    def add_member(
        self, team: str, identity: str, *, role: str = "member", active: bool = True
    ) -> Membership | Invitation:
        body = {"identity": identity, "role": role, "active": active}
        found = dict(self._call("POST", _team_path(team) + "/members", body=body))
        status = found.pop("status", "member")
        return _model(Invitation if status == "invited" else Membership, found)

    def invitations(self) -> list[Invitation]:
        return [_model(Invitation, i) for i in self._call("GET", "/v1/invitations")]

    def accept(self, team: str) -> Membership:
        found = dict(self._call("POST", _team_path(team) + "/accept"))
        found.pop("status", None)
        return _model(Membership, found)

    def decline(self, team: str) -> bool:
        return bool(self._call("POST", _team_path(team) + "/decline")["deleted"])

    def remove_member(self, team: str, identity: str) -> bool:
        path = _team_path(team) + f"/members/{_seg(identity)}"
        return bool(self._call("DELETE", path)["deleted"])

    def grant(self, namespace: str, grantee: str) -> Grant:
        body = {"namespace": namespace, "grantee": grantee}
        return _model(Grant, self._call("POST", "/v1/grants", body=body))

    def revoke(self, namespace: str, grantee: str) -> bool:
        body = {"namespace": namespace, "grantee": grantee}
        return bool(self._call("POST", "/v1/grants/revoke", body=body)["deleted"])

    def grants(self, namespace: str | None = None) -> list[Grant]:
        found = self._call("GET", "/v1/grants", params={"namespace": namespace})
        return [_model(Grant, g) for g in found]


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


def _listed(values: Sequence[str] | None) -> builtins.list[str] | None:
    if values is None:
        return None
    return [values] if isinstance(values, str) else builtins.list(values)


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _plural(kind: str) -> str:
    if kind not in ("group", "org"):
        raise ValidationError("kind", "must be 'group' or 'org'")
    return kind + "s"


def _team_path(team: str) -> str:
    kind, _, name = team.partition(":")
    kind = "group" if kind == "ring" else kind
    if not name or kind not in ("group", "org"):
        raise ValidationError("team", "must be group:NAME (or ring:NAME) or org:NAME")
    return f"/v1/{kind}s/{_seg(name)}"


def _model(cls: Any, data: dict[str, Any]) -> Any:
    values = dict(data)
    if "created_at" in values:
        values["created_at"] = as_utc(values["created_at"])
    return cls(**values)
