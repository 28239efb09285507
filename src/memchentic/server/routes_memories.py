"""``/v1`` routes for memories: CRUD, search (with the trace), recall, edges,
history, entities, neighbourhoods. Each route calls one library method as the
caller's identity; errors become JSON answers in ``errors.py``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from .deps import CallerDep
from .schemas import (
    AddManyRequest,
    AddRequest,
    AskRequest,
    ConsolidateRequest,
    CountOut,
    DeleteAllRequest,
    DeletedOut,
    EdgeOut,
    HitOut,
    ImproveRequest,
    MemoryOut,
    OptText,
    RecallRequest,
    RelateRequest,
    ReviseRequest,
    SearchRequest,
    VersionOut,
    WriteOut,
    answer_out,
    json_filters,
    memory_out,
    options,
    write_out,
)

router = APIRouter(prefix="/v1", tags=["memories"])

Id = Annotated[str, "the memory id"]
Many = Annotated[list[str] | None, Query(max_length=64)]


@router.post("/memories", response_model=WriteOut, summary="Remember one memory")
def add(body: AddRequest, who: CallerDep) -> dict[str, Any]:
    """Save a memory; the answer says what happened (``added``, ``updated``,
    ``merged``, ``reinforced``, ``superseded`` or ``refused``) and which ids."""
    fields = options(body)
    return write_out(who.mem.add(fields.pop("content"), **fields))


@router.post("/memories/batch", response_model=list[WriteOut], summary="Remember several")
def add_many(body: AddManyRequest, who: CallerDep) -> list[dict[str, Any]]:
    """Save several memories with one embedding call; one result per item, in order."""
    return [write_out(r) for r in who.mem.add_many([options(i) for i in body.items])]


@router.get("/memories", response_model=list[MemoryOut], summary="List memories")
def list_memories(
    who: CallerDep,
    user_id: OptText = None,
    agent_id: OptText = None,
    namespace: OptText = None,
    type: Many = None,  # noqa: A002 - the documented name
    kind: OptText = None,
    tag: Many = None,
    include_expired: bool = False,
    include_superseded: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    newest_first: bool = True,
    as_of: Annotated[str | None, Query(max_length=64, description="ISO 8601 date or time")] = None,
    filters: Annotated[
        str | None, Query(max_length=16_384, description="a metadata filter, as JSON")
    ] = None,
) -> list[dict[str, Any]]:
    """Memories in scope, newest first; filter by namespace, type (repeatable), kind
    and tag (repeatable), by ``as_of`` (those that held then) and by metadata
    (``filters``, JSON). Expired and superseded ones only on request."""
    found = who.mem.list(
        user_id=user_id, agent_id=agent_id, namespace=namespace, type=type, kind=kind,
        tags=tag, include_expired=include_expired, include_superseded=include_superseded,
        limit=limit, offset=offset, newest_first=newest_first, as_of=as_of,
        filters=json_filters(filters),
    )  # fmt: skip
    return [memory_out(r) for r in found]


@router.get("/memories/{memory_id}", response_model=MemoryOut, summary="Open a memory")
def get(memory_id: Id, who: CallerDep, touch: bool = True) -> dict[str, Any]:
    """One memory (an expired one too); counts as a recall unless ``touch=false``.
    A memory the caller may not see is a 404, exactly like a missing one."""
    return memory_out(who.mem.get(memory_id, touch=touch))


@router.patch("/memories/{memory_id}", response_model=WriteOut, summary="Revise a memory")
def revise(memory_id: Id, body: ReviseRequest, who: CallerDep) -> dict[str, Any]:
    """Edit a memory; moves ``updated_at`` (resets its age) and revives an expired one."""
    fields = options(body, keep_nulls=True)
    return write_out(who.mem.revise(memory_id, fields.pop("content", None), **fields))


@router.post("/memories/{memory_id}/improve", response_model=WriteOut, summary="Adjust confidence")
def improve(memory_id: Id, body: ImproveRequest, who: CallerDep) -> dict[str, Any]:
    """Adjust confidence, importance or validity without resetting the memory's age."""
    return write_out(who.mem.improve(memory_id, **options(body)))


@router.delete("/memories/{memory_id}", response_model=WriteOut, summary="Forget a memory")
def delete(memory_id: Id, who: CallerDep) -> dict[str, Any]:
    """Forget a memory completely (its history keeps a tombstone)."""
    return write_out(who.mem.delete(memory_id))


@router.post("/memories/delete_all", response_model=CountOut, summary="Forget one scope")
def delete_all(body: DeleteAllRequest, who: CallerDep) -> dict[str, Any]:
    """Forget every memory of exactly this scope that the caller may change (at least
    one of ``user_id``, ``agent_id``, ``session_id``, ``namespace``); how many went."""
    return {"deleted": who.mem.delete_all(**options(body))}


@router.get("/memories/{memory_id}/history", response_model=list[VersionOut], summary="Versions")
def history(memory_id: Id, who: CallerDep) -> list[dict[str, Any]]:
    """Every version of a memory, oldest first: who changed what, when."""
    return [v.to_dict() for v in who.mem.history(memory_id)]


@router.get("/memories/{memory_id}/edges", response_model=list[EdgeOut], summary="Edges")
def edges(memory_id: Id, who: CallerDep, kind: OptText = None) -> list[dict[str, Any]]:
    """Edges from or to a memory (only those whose other end the caller can see)."""
    return [e.to_dict() for e in who.mem.edges(memory_id, kind=kind)]


@router.get("/memories/{memory_id}/neighbors", summary="Neighbourhood")
def neighbors(
    memory_id: Id,
    who: CallerDep,
    depth: Annotated[int, Query(ge=1, le=3)] = 1,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[dict[str, Any]]:
    """Memories connected through edges and shared entities, up to ``depth`` hops."""
    return [n.to_dict() for n in who.mem.neighbors(memory_id, depth, limit=limit)]


@router.post("/memories/{memory_id}/pin", response_model=WriteOut, summary="Pin")
def pin(memory_id: Id, who: CallerDep) -> dict[str, Any]:
    """Pin a memory: it goes in the stable part of every context that can see it."""
    return write_out(who.mem.pin(memory_id))


@router.post("/memories/{memory_id}/unpin", response_model=WriteOut, summary="Unpin")
def unpin(memory_id: Id, who: CallerDep) -> dict[str, Any]:
    return write_out(who.mem.unpin(memory_id))


@router.post("/memories/{memory_id}/restore", response_model=WriteOut, summary="Restore")
def restore(memory_id: Id, who: CallerDep) -> dict[str, Any]:
    """Bring a superseded (or expired) memory back live; the memory that superseded it
    stays live too. ``restored``, or ``unchanged`` when there was nothing to undo; a
    memory the key cannot see is 404, one it may read but not write 403."""
    return write_out(who.mem.restore(memory_id))


@router.post("/search", response_model=list[HitOut], summary="Search")
def search(body: SearchRequest, who: CallerDep) -> list[dict[str, Any]]:
    """The memories that best answer ``query``, best first; ``include_trace`` adds
    every signal that made each score (docs/design.md, section 3)."""
    fields = options(body)
    return [h.to_dict() for h in who.mem.search(fields.pop("query"), **fields)]


@router.post("/recall", response_model=list[HitOut], summary="Recall by entity")
def recall(body: RecallRequest, who: CallerDep) -> list[dict[str, Any]]:
    """Memories naming an entity across every readable namespace, newest first."""
    return [h.to_dict() for h in who.mem.recall(**options(body))]


@router.post("/edges", response_model=EdgeOut, summary="Relate two memories")
def relate(body: RelateRequest, who: CallerDep) -> dict[str, Any]:
    """A typed, weighted edge ``source -> target`` (both writable by the caller)."""
    edge = who.mem.relate(
        body.source, body.target, body.kind, body.strength, metadata=body.metadata
    )
    return edge.to_dict()


@router.delete("/edges/{edge_id}", response_model=DeletedOut, summary="Remove an edge")
def delete_edge(edge_id: str, who: CallerDep) -> dict[str, Any]:
    return {"deleted": who.mem.delete_edge(edge_id)}


@router.get("/entities", summary="Entities")
def entities(
    who: CallerDep,
    user_id: OptText = None,
    namespace: OptText = None,
    by_namespace: bool = False,
) -> dict[str, Any]:
    """Entity names with how many visible memories name them."""
    return who.mem.entities(user_id=user_id, namespace=namespace, by_namespace=by_namespace)


@router.get("/stats", summary="Counts")
def stats(who: CallerDep, user_id: OptText = None, namespace: OptText = None) -> dict[str, Any]:
    """Counts of the memories the caller can see: live, expired, superseded, by type."""
    return who.mem.stats(user_id=user_id, namespace=namespace)


@router.post("/ask", summary="Answer from memory")
def ask(body: AskRequest, who: CallerDep) -> dict[str, Any]:
    """Cited passages for a question, and an answer when a chat model is configured."""
    fields = options(body)
    return answer_out(who.mem.ask(fields.pop("question"), **fields))


@router.post("/consolidate", summary="Fold near duplicates")
def consolidate(body: ConsolidateRequest, who: CallerDep) -> dict[str, Any]:
    """Fold clusters of near-duplicate entries into their strongest member."""
    return who.mem.consolidate(**options(body)).to_dict()
