"""Every face offers every operation of the one table (``memchentic.operations``),
under the same name and returning the same type.

The table is enumerated, not a hand list: an operation added to ``Memory`` without a
row here fails ``test_memory_has_nothing_the_table_lacks``; a row that a face lacks,
or answers with another type, fails the face's test.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

import pytest

from memchentic import AsyncClient, AsyncMemory, Client, Memory
from memchentic.args import AddManyArgs
from memchentic.operations import LIFECYCLE, OPERATIONS, REMOTE_ONLY, Operation, operation

IDS = [op.name for op in OPERATIONS]


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _returns(cls: type, name: str) -> Any:
    member = getattr(cls, name)
    return typing.get_type_hints(member)["return"]


def _names(op: Operation) -> tuple[str, ...]:
    return (op.name, *op.aliases)


def test_the_table_names_each_operation_once() -> None:
    names = [n for op in OPERATIONS for n in _names(op)]
    assert len(names) == len(set(names))
    assert operation("remember") is operation("add")
    with pytest.raises(KeyError):
        operation("no_such_operation")


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_memory_defines_it(op: Operation) -> None:
    for name in _names(op):
        assert callable(getattr(Memory, name, None)), f"Memory lacks {name}"
        assert _returns(Memory, name) == op.returns, name


def test_memory_has_nothing_the_table_lacks() -> None:
    listed = {n for op in OPERATIONS for n in _names(op)} | set(LIFECYCLE)
    assert _public(Memory) - listed == set()


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_async_memory_waits_for_it(op: Operation) -> None:
    for name in _names(op):
        if op.group == "events" and name in ("subscribe", "unsubscribe"):
            # registering a callback does no I/O: the same sync method
            assert _returns(AsyncMemory, name) == op.returns
            continue
        twin = getattr(AsyncMemory, "a" + name, None)
        assert twin is not None, f"AsyncMemory lacks a{name}"
        assert inspect.iscoroutinefunction(twin), f"a{name} is not async"
        assert _returns(AsyncMemory, "a" + name) == op.returns, f"a{name}"


def test_async_memory_has_nothing_the_table_lacks() -> None:
    listed = {"a" + n for op in OPERATIONS for n in _names(op)}
    listed |= {"subscribe", "unsubscribe", "as_identity", "for_identity", "aclose", "sync"}
    assert _public(AsyncMemory) - listed == set()


@pytest.mark.parametrize("client", [Client, AsyncClient], ids=["Client", "AsyncClient"])
@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_the_http_clients_call_it(op: Operation, client: type) -> None:
    method = getattr(client, op.name, None)
    if not op.remote:
        assert method is None, f"{client.__name__}.{op.name}: {op.local_only}"
        return
    assert method is not None, f"{client.__name__} lacks {op.name}"
    assert _returns(client, op.name) == op.returns, f"{client.__name__}.{op.name}"
    if client is AsyncClient:
        assert inspect.iscoroutinefunction(method), f"AsyncClient.{op.name} is not async"


def test_the_async_client_has_every_name_of_the_sync_one() -> None:
    sync = {n for n in _public(Client) if callable(getattr(Client, n))} - {"close"}
    assert sync - _public(AsyncClient) == set()
    assert inspect.iscoroutinefunction(AsyncClient.aclose)
    for name in sync - {"stream_events"}:  # an Iterator there, an AsyncIterator here
        assert _returns(AsyncClient, name) == _returns(Client, name), name


def test_the_client_returns_the_librarys_types() -> None:
    """Where Memory returns its own objects, so does the client (no plain dicts)."""
    for name in ("ask", "consolidate", "maintain", "neighbors", "context", "history"):
        assert _returns(Client, name) == _returns(Memory, name), name
    assert set(REMOTE_ONLY) <= _public(Client)


def test_every_route_the_table_names_is_served(tmp_path: Any) -> None:
    pytest.importorskip("fastapi")
    from memchentic.server.app import create_app

    mem = Memory(tmp_path / "faces.db", embedder="hash")
    try:
        paths = create_app(mem, mcp=False, console=False).openapi()["paths"]
    finally:
        mem.close()
    served = {(method.upper(), path) for path, item in paths.items() for method in item}
    for op in OPERATIONS:
        if op.http is None:
            assert not op.remote, f"{op.name} is remote but names no route"
            continue
        method, path = op.http.split(" ", 1)
        assert (method, "/v1" + path) in served, f"{op.name}: no route {op.http}"


def test_every_tool_the_table_names_is_an_mcp_tool() -> None:
    pytest.importorskip("mcp")
    from memchentic.server.mcp_server import TOOLS

    named = {op.mcp for op in OPERATIONS if op.mcp}
    assert named == set(TOOLS)


def test_every_command_the_table_names_exists() -> None:
    import typer.main

    from memchentic.cli import app

    root = typer.main.get_command(app)
    for op in OPERATIONS:
        if op.cli is None:
            continue
        command: Any = root
        for word in op.cli.split():
            assert hasattr(command, "commands"), f"{op.name}: {op.cli}"
            assert word in command.commands, f"{op.name}: no command `memchentic {op.cli}`"
            command = command.commands[word]


def _classes(hint: Any, found: set[type]) -> None:
    if isinstance(hint, type):
        if hint.__module__.startswith("memchentic") and hint not in found:
            found.add(hint)
            if dataclasses.is_dataclass(hint):  # what the type carries is exported too
                for value in typing.get_type_hints(hint).values():
                    _classes(value, found)
        return
    for arg in typing.get_args(hint):
        _classes(arg, found)


def test_every_type_a_face_takes_or_returns_is_exported() -> None:
    """A user never imports a private module to annotate a call's argument or result."""
    import httpx

    import memchentic

    faces = [Memory, AsyncMemory, Client, AsyncClient, memchentic.Directory,
             memchentic.RemoteDirectory, memchentic.AsyncRemoteDirectory]  # fmt: skip
    found: set[type] = set()
    for face in faces:
        for name in ["__init__", *_public(face)]:
            member = getattr(face, name)
            member = member.fget if isinstance(member, property) else member
            if callable(member):
                names = {**vars(memchentic), "httpx": httpx}  # TYPE_CHECKING-only imports
                hints = typing.get_type_hints(member, localns=names)
                for hint in hints.values():
                    _classes(hint, found)
    missing = sorted(f"{t.__module__}.{t.__name__}" for t in found
                     if getattr(memchentic, t.__name__, None) is not t)  # fmt: skip
    assert missing == []
    assert {t.__name__ for t in found} <= set(memchentic.__all__)


def _isort_style(name: str) -> tuple[int, str]:
    """Constants, then classes, then functions (ruff's RUF022 order)."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2), name


def test_the_packages_export_lists_are_sorted_and_real() -> None:
    import importlib
    import pkgutil

    import memchentic

    packages = [memchentic] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(memchentic.__path__, "memchentic.")
        if info.ispkg and not info.name.startswith("memchentic.server")
    ]
    for package in packages:
        names = getattr(package, "__all__", None)
        if names is None:
            continue
        assert list(names) == sorted(names, key=_isort_style), package.__name__
        assert [n for n in names if not hasattr(package, n)] == [], package.__name__


# --- each operation's arguments as a value (issue 35, item 3) ----------------------------
def _parameters(op: Operation) -> list[inspect.Parameter]:
    """``Memory``'s parameters of ``op``, less ``self`` and the private ones (``_due``)."""
    found = inspect.signature(getattr(Memory, op.name)).parameters.values()
    return [p for p in found if p.name != "self" and not p.name.startswith("_")]


def _option_names(op: Operation) -> set[str]:
    """What ``Memory`` takes as free keywords for ``op``, read from the engine where it
    keeps the list; else the documented names."""
    from memchentic.engine.writes import ADD_OPTIONS

    if op.name in ("add", "add_many"):
        return set(ADD_OPTIONS) - {"content"}
    if op.name == "add_message":  # record_turn's options
        turn = inspect.signature(Memory.record_turn).parameters.values()
        return {p.name for p in turn if p.kind is p.KEYWORD_ONLY}
    if op.name == "add_working":  # add's, less what working memory sets itself
        return set(ADD_OPTIONS) - {"content", "type", "session_id", "slot_key"}
    return {
        "revise": {"title", "tags", "metadata", "type", "confidence", "importance",
                   "valid_from", "valid_to", "path_hint", "repo", "tier_l0", "tier_l1",
                   "entities", "pinned", "expires_at", "now"},
        "export": {"vectors"},
        "import_": {"strict", "secrets"},
        "reindex": {"embedder", "batch_size", "progress"},
    }[op.name]  # fmt: skip


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_the_argument_class_is_the_methods_signature(op: Operation) -> None:
    """Names, order, keyword-only-ness and defaults of the class are those of the method;
    free keywords (``**options``) are spelled out as keyword-only options."""
    from memchentic.args import Args

    assert op.args is not Args, f"{op.name} names no argument class"
    assert dataclasses.is_dataclass(op.args) and op.args.__dataclass_params__.frozen  # type: ignore[attr-defined]
    params = _parameters(op)
    wanted = [(p.name, p.kind, p.default) for p in params if p.kind is not p.VAR_KEYWORD]
    taken = [(p.name, p.kind, p.default) for p in inspect.signature(op.args).parameters.values()
             if p.name not in op.args.options]  # fmt: skip
    assert taken == wanted
    if any(p.kind is p.VAR_KEYWORD for p in params):
        assert set(op.args.options) == _option_names(op)
        options = [p for p in inspect.signature(op.args).parameters.values()
                   if p.name in op.args.options]  # fmt: skip
        assert {p.kind for p in options} == {inspect.Parameter.KEYWORD_ONLY}
    else:
        assert op.args.options == frozenset()


def test_argument_values_call_the_method(tmp_path: Any) -> None:
    """``kwargs()`` is what the method takes: options not given stay out."""
    from memchentic.args import UNSET, AddArgs, ReviseArgs, SearchArgs

    assert AddArgs("tea", user_id="sam").kwargs() == {"content": "tea", "user_id": "sam"}
    assert ReviseArgs("m1", title=None).kwargs() == {"memory_id": "m1", "content": None,
                                                     "title": None}  # fmt: skip
    assert ReviseArgs("m1").title is UNSET
    with Memory(tmp_path / "args.db", embedder="hash") as mem:
        mem.add(**AddArgs("Sam drinks green tea", user_id="sam").kwargs())
        hits = mem.search(**SearchArgs("tea", user_id="sam", limit=3).kwargs())
    assert [h.memory.content for h in hits] == ["Sam drinks green tea"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SearchArgs("tea").limit = 3  # type: ignore[misc]


# --- what each face offers of an operation's arguments ------------------------------------
# A face's parameter is the argument field of the same name, or of the name given here.
RENAMED: dict[str, dict[str, str]] = {
    "http": {"tag": "tags", "type": "type"},
    "mcp": {"id": "memory_id"},
    "cli": {"user": "user_id", "agent": "agent_id", "session": "session_id", "tag": "tags",
            "type_": "type", "filter_": "filters", "path": "path_hint", "trace": "include_trace",
            "slot": "slot_key", "budget": "budget_tokens", "text": "content"},
}  # fmt: skip
#: Renames of one operation on one face.
RENAMED_FOR: dict[tuple[str, str], dict[str, str]] = {
    ("http", "events"): {"type": "types"},
    ("http", "add_message"): {"role": "message", "content": "message"},
    ("cli", "learn"): {"file": "messages"},
    ("cli", "export"): {"file": "target"},
    ("cli", "import_"): {"file": "source"},
}
#: A face's own parameters that are no argument of the operation (output, which store).
PRESENTATION: dict[str, set[str]] = {"http": set(), "mcp": set(),
                                     "cli": {"as_json", "store", "embedder"}}  # fmt: skip

NOW = "the clock is the engine's: only a caller in its process (a test, a replay) moves it"
OBJECT = "a Python object of the caller's process (a model client, a callback)"
CLOCK_AND_OBJECTS = {"now": NOW, "chat": OBJECT, "summarizer": OBJECT, "extractor": OBJECT,
                     "embedder": OBJECT, "progress": OBJECT}  # fmt: skip
TOOL = "an agent's tool stays small: each parameter is read by the model on every turn"
SHELL = "not offered at the shell: the library and HTTP take it"
BATCH = "each item of the batch carries its own options (the HTTP AddRequest)"
STREAMED = "the export streams to the caller, who writes it where it wants"

#: Fields a face leaves out on purpose, with the reason, by face and operation
#: (``now`` and Python objects are left out of every face: CLOCK_AND_OBJECTS).
OMITTED: dict[str, dict[str, dict[str, str]]] = {
    "http": {
        "add_many": dict.fromkeys(AddManyArgs.options - {"now"}, BATCH),
        "export": {"target": STREAMED},
    },
    "mcp": {
        "add": dict.fromkeys(("agent_id", "auto_edges", "confidence", "created_at", "entities",
                              "expires_at", "on_duplicate", "path_hint", "permanent", "pinned",
                              "repo", "secrets", "session_id", "tier_l0", "tier_l1",
                              "valid_from", "valid_to"), TOOL),
        "revise": dict.fromkeys(("confidence", "entities", "expires_at", "metadata", "path_hint",
                                 "pinned", "repo", "tier_l0", "tier_l1", "valid_from",
                                 "valid_to"), TOOL),
        "search": dict.fromkeys(("agent_id", "as_of", "include_expired", "include_superseded",
                                 "intent", "kind", "path_hint", "profile", "repo", "threshold",
                                 "tier"), TOOL),
        "recall": dict.fromkeys(("agent_id", "as_of"), TOOL),
        "list": dict.fromkeys(("agent_id", "as_of", "filters", "include_expired",
                               "include_superseded", "kind", "newest_first", "offset"), TOOL),
        "relate": {"metadata": TOOL},
        "context": dict.fromkeys(("agent_id", "as_of", "limit", "namespace", "recent_turns"), TOOL),
    },
    "cli": {
        "add": dict.fromkeys(("auto_edges", "created_at", "entities", "expires_at", "metadata",
                              "path_hint", "pinned", "repo", "secrets", "session_id", "tier_l0",
                              "tier_l1", "valid_from", "valid_to"), SHELL),
        "revise": dict.fromkeys(("confidence", "entities", "expires_at", "importance", "metadata",
                                 "path_hint", "pinned", "repo", "tags", "tier_l0", "tier_l1",
                                 "title", "type", "valid_from", "valid_to"), SHELL),
        "search": dict.fromkeys(("intent", "tier"), "the table shows each hit's best body"),
        "get": {"touch": "`memchentic get` is a person reading a memory: a recall"},
        "list": {"newest_first": "`memchentic list` shows the newest first, as `ls -t`"},
        "neighbors": {"limit": SHELL},
        "ask": {"agent_id": SHELL},
        "record_turn": {"metadata": SHELL},
        "context": {"as_of": SHELL, "recent_turns": SHELL},
        "learn": {"metadata": SHELL},
        "import_": {"secrets": SHELL},
        "reindex": {"batch_size": SHELL},
    },
}  # fmt: skip


def _offered_http(op: Operation, spec: dict[str, Any]) -> set[str]:
    method, path = op.http.split(" ", 1)  # type: ignore[union-attr]
    item = spec["paths"]["/v1" + path][method.lower()]
    names = {p["name"] for p in item.get("parameters", [])}
    if "requestBody" in item:
        ref = item["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        names |= set(spec["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])
    return names


def _faces(tmp_path: Any) -> dict[str, dict[str, set[str]]]:
    """Each face's parameters of each operation it offers, by face and operation name."""
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    import asyncio

    import typer.main

    from memchentic.cli import app
    from memchentic.server.app import create_app
    from memchentic.server.mcp_server import build_server

    mem = Memory(tmp_path / "faces.db", embedder="hash")
    try:
        spec = create_app(mem, mcp=False, console=False).openapi()
        tools = asyncio.run(build_server(lambda _: mem).list_tools())
    finally:
        mem.close()
    schemas = {tool.name: set(tool.input_schema["properties"]) for tool in tools}
    root: Any = typer.main.get_command(app)
    found: dict[str, dict[str, set[str]]] = {"http": {}, "mcp": {}, "cli": {}}
    for op in OPERATIONS:
        if op.http:
            found["http"][op.name] = _offered_http(op, spec)
        if op.mcp:
            found["mcp"][op.name] = schemas[op.mcp]
        if op.cli:
            command = root
            for word in op.cli.split():
                command = command.commands[word]
            found["cli"][op.name] = {p.name for p in command.params if p.name}
    return found


def test_each_face_offers_the_arguments_or_says_why_not(tmp_path: Any) -> None:
    """A field added to an argument class fails here until every face offers it or
    ``OMITTED`` says why it does not; a face's parameter that is no field fails too."""
    problems = []
    for face, offered in _faces(tmp_path).items():
        for name, params in offered.items():
            op = operation(name)
            renamed = {**RENAMED[face], **RENAMED_FOR.get((face, name), {})}
            taken = {renamed.get(p, p) for p in params - PRESENTATION[face]}
            fields = set(op.args.names())
            if taken - fields:
                problems.append(f"{face} {name}: {sorted(taken - fields)} are no arguments")
            omitted = dict(OMITTED[face].get(name, {}))
            omitted |= {k: v for k, v in CLOCK_AND_OBJECTS.items() if k in fields}
            if fields - taken != set(omitted):
                missing = sorted(fields - taken - set(omitted))
                stale = sorted(set(omitted) - (fields - taken))
                problems.append(f"{face} {name}: offers none of {missing}, offers {stale}")
    assert problems == []


#: Operations whose free keywords a face still takes as ``**changes``: a revision's
#: ``None`` clears a field, so a typed keyword needs ``args.UNSET`` as its default.
FREE_KEYWORDS = {"revise"}


def _typed_keywords(fn: Any) -> dict[str, Any]:
    """The TypedDict of each ``**name: Unpack[TypedDict]`` parameter of ``fn`` (PEP 692)."""
    import memchentic

    found = inspect.signature(fn).parameters.values()
    if not any(p.kind is p.VAR_KEYWORD for p in found):
        return {}
    hints = typing.get_type_hints(fn, localns=vars(memchentic))
    unpacked = [p.name for p in found if p.kind is p.VAR_KEYWORD]
    unpacked = [name for name in unpacked if typing.get_origin(hints[name]) is typing.Unpack]
    return {name: typing.get_args(hints[name])[0] for name in unpacked}


def _signature(
    fn: Any, drop: set[str] = frozenset(), args: Any = None  # type: ignore[assignment]
) -> list[tuple[str, Any, Any]]:  # fmt: skip
    """Names, kinds and defaults of ``fn``'s parameters: those before ``*`` in order, the
    keyword-only ones by name (their order is no part of a call). A ``**options:
    Unpack[TypedDict]`` parameter stands for its keys, keyword-only, with the defaults of
    the argument class ``args`` that the face passes them to."""
    typed = _typed_keywords(fn)
    found = []
    for p in inspect.signature(fn).parameters.values():
        if p.name in typed:
            defaults = inspect.signature(args).parameters
            keys = typed[p.name].__annotations__
            found += [(n, p.KEYWORD_ONLY, defaults[n].default) for n in keys]
        else:
            found.append((p.name, p.kind, p.default))
    found = [f for f in found if f[0] not in {"self", *drop}]
    keyword_only = sorted(f for f in found if f[1] is inspect.Parameter.KEYWORD_ONLY)
    return [f for f in found if f[1] is not inspect.Parameter.KEYWORD_ONLY] + keyword_only


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_async_memory_takes_the_argument_class(op: Operation) -> None:
    """``a<name>`` takes the operation's arguments: names, kinds, defaults."""
    if op.name in FREE_KEYWORDS or op.name in ("subscribe", "unsubscribe"):
        return
    assert _signature(getattr(AsyncMemory, "a" + op.name), args=op.args) == _signature(op.args)


#: Where a client's default differs from the engine's, and why.
CLIENT_DEFAULTS = {
    ("export", "vectors"): "over HTTP the export is a download: vectors only on request",
}


@pytest.mark.parametrize("client", [Client, AsyncClient], ids=["Client", "AsyncClient"])
@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.remote], ids=lambda op: op.name)
def test_the_http_clients_take_the_argument_class(op: Operation, client: type) -> None:
    """A client method takes the operation's arguments (spelled out, or typed through
    ``**options: Unpack[...]``), less the clock and the process's objects
    (CLOCK_AND_OBJECTS: no remote face takes them)."""
    if op.name in FREE_KEYWORDS:
        return
    wanted = _signature(op.args, drop=set(CLOCK_AND_OBJECTS))
    taken = _signature(getattr(client, op.name), args=op.args)
    differ = {name for (name_op, name) in CLIENT_DEFAULTS if name_op == op.name}
    assert [p for p in taken if p[0] not in differ] == [p for p in wanted if p[0] not in differ]
    assert {p[0] for p in taken} == {p[0] for p in wanted}


FACES = [AsyncMemory, Client, AsyncClient]


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_the_typed_keywords_are_the_argument_fields(face: type) -> None:
    """A keyword a face takes through ``**options: Unpack[...]`` (``memchentic.args.keywords``)
    has the type its argument class's field has, as written."""
    problems = []
    for op in OPERATIONS:
        method = getattr(face, ("a" if face is AsyncMemory else "") + op.name, None)
        if method is None:
            continue
        written = {f.name: f.type for f in dataclasses.fields(op.args)}
        for declared in _typed_keywords(method).values():
            for name, hint in declared.__annotations__.items():
                text = hint.__forward_arg__ if isinstance(hint, typing.ForwardRef) else hint
                if text != written.get(name):
                    problems.append(f"{face.__name__} {op.name} {name}: {text}")
    assert problems == []
