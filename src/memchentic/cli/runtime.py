"""What every command runs in: the ``--as`` identity of the invocation (carried in
the typer context), the settings, and the store or :class:`~memchentic.Memory`
opened with memchentic errors turned into ``error: ...`` and an exit code.

Below every command group; above :mod:`.options` and :mod:`.output` only.
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import typer

from ..embed import Embedder, get_embedder
from ..errors import MemchenticError, NotFoundError
from ..memory import Memory
from ..record import WriteResult
from ..settings import Settings
from ..store import Store, is_libpq_string, open_store
from .options import EmbedderOpt, JsonOpt, MemoryIdArg, StoreOpt
from .output import fail, print_write, warn

#: Commands that work on the store itself, beyond the rights of any identity: the one
#: place that refuses them under ``--as`` (issue 20, item 6). Every other command runs
#: through the library as that identity, whose rules refuse what it may not do (the
#: directory commands included).
TRUSTED_ONLY: frozenset[str] = frozenset(
    {"keys", "reindex", "migrate", "serve", "check", "backup", "restore"}
)


#: Commands that may make the store they are given (the first write can be theirs);
#: any other command on a SQLite path where no store is fails and creates nothing.
CREATES_STORE: frozenset[str] = frozenset({
    "add", "import", "learn", "serve", "mcp", "session turn", "keys create",
    "identity create", "group create", "org create",
})  # fmt: skip


@dataclass(frozen=True)
class Invocation:
    """What the app callback learnt for the whole invocation; its ``ctx.obj``."""

    #: The identity of ``--as``; None: the trusted local principal.
    acting_as: str | None = None


def confine(ctx: typer.Context, as_identity: str | None) -> None:
    """Refuse an empty ``--as`` and the trusted-only commands under ``--as``; then
    carry the identity to the command in ``ctx.obj``."""
    if as_identity is not None:
        if not as_identity.strip():
            fail("--as: must name an identity (NAME or agent:NAME), not be empty")
        command = ctx.invoked_subcommand
        if command in TRUSTED_ONLY:
            fail(f"{command} runs as the local owner of the store; it is refused under --as")
    ctx.obj = Invocation(acting_as=as_identity)


def acting_as(ctx: typer.Context) -> str | None:
    """The ``--as`` identity of this invocation; None: the trusted local principal."""
    invocation = ctx.find_object(Invocation)
    return invocation.acting_as if invocation is not None else None


def stdin_or(text: str) -> str:
    """``text`` itself, or all of stdin when it is ``-``."""
    return sys.stdin.read() if text == "-" else text


@contextmanager
def file_errors(verb: str, path: str) -> Iterator[None]:
    """An ``OSError`` on ``path`` becomes ``error: cannot VERB PATH: reason``."""
    try:
        yield
    except OSError as exc:
        fail(f"cannot {verb} {path}: {exc.strerror or exc}")


def settings() -> Settings:
    try:
        return Settings()
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        fail(f"invalid setting ({problems})")


def command_name(ctx: typer.Context) -> str:
    """The command's words below the program: ``search``, ``session turn``."""
    words = []
    level: Any = ctx
    while level.parent is not None:
        words.append(level.info_name or "")
        level = level.parent
    return " ".join(reversed(words))


def require_store(location: str, command: str) -> None:
    """Fail, creating nothing, when ``location`` is a SQLite path where no store is
    and ``command`` is none of :data:`CREATES_STORE`: a mistyped ``--store`` answers
    an error, not an empty result from a new empty store."""
    if command in CREATES_STORE or "://" in location and not location.startswith("sqlite:"):
        return
    try:
        if is_libpq_string(location):
            return
    except MemchenticError as exc:
        fail(str(exc))
    path = Path(location.removeprefix("sqlite://")).expanduser()
    if not path.exists():
        fail(f"no store at {path}: `{command}` works on a store that exists and makes "
             "none (`add`, `import` or `serve` make one)")  # fmt: skip


@contextmanager
def memory(
    ctx: typer.Context, store: str | None, embedder: str | None, *, check_embedder: bool = True
) -> Iterator[Memory]:
    """Open the store as the ``--as`` identity; memchentic errors become ``error: ...``
    (exit code 1 for not found, else 2)."""
    cfg = settings()
    require_store(store or cfg.default_store, command_name(ctx))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            mem = Memory(
                store=store or cfg.default_store,
                embedder=embedder,
                settings=cfg,
                check_embedder=check_embedder,
            )
        for warning in caught:
            warn(str(warning.message))
        with mem:
            identity = acting_as(ctx)
            yield mem.as_identity(identity) if identity is not None else mem
    except NotFoundError as exc:
        fail(str(exc), 1)
    except MemchenticError as exc:
        fail(str(exc))


@contextmanager
def trusted(store: str | None) -> Iterator[tuple[Settings, str]]:
    """Settings and the store location for a trusted-only command (``--as`` is refused
    before: :data:`TRUSTED_ONLY`); memchentic errors become ``error: ...``."""
    cfg = settings()
    try:
        yield cfg, store or cfg.default_store
    except MemchenticError as exc:
        fail(str(exc))


@contextmanager
def opened_store(store: str | None, command: str) -> Iterator[tuple[Store, Settings]]:
    """The store alone, no embedder (the trusted-only ``command``), closed afterwards."""
    with trusted(store) as (cfg, location):
        require_store(location, command)
        opened = open_store(location, cfg)
        try:
            yield opened, cfg
        finally:
            opened.close()


def embedder_mismatch(
    opened: Store, name: str, cfg: Settings
) -> tuple[str, str | None, Embedder] | None:
    """The model and dimension the store recorded, and the embedder ``name``, when
    they differ; None when they match or the store recorded none."""
    wanted = get_embedder(name, cfg)
    model, dim = opened.get_meta("embedding_model"), opened.get_meta("embedding_dimension")
    if model is None or (model, int(dim or 0)) == (wanted.model, wanted.dimension):
        return None
    return model, dim, wanted


def _shared(ctx: typer.Context, store: StoreOpt = None, embedder: EmbedderOpt = None) -> None:
    """The parameters :func:`opens_memory` gives a command (never called)."""


def opens_memory(
    func: Callable[..., None] | None = None, *, check_embedder: bool = True, json_last: bool = False
) -> Any:
    """Make ``func(mem, **options)`` a command: it gains ``--store`` and ``--embedder``
    after its own options (before its last one, ``--json``, with ``json_last``) and
    runs with the :class:`~memchentic.Memory` they open, as the ``--as`` identity of
    the typer context."""

    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(func, eval_str=True).parameters.values())[1:]
        ctx_param, *store_options = inspect.signature(_shared, eval_str=True).parameters.values()
        head, tail = (own[:-1], own[-1:]) if json_last else (own, [])
        params = [ctx_param, *head, *store_options, *tail]

        @functools.wraps(func)
        def command(
            ctx: typer.Context,
            store: str | None = None,
            embedder: str | None = None,
            **options: Any,
        ) -> None:
            with memory(ctx, store, embedder, check_embedder=check_embedder) as mem:
                func(mem, **options)

        del command.__wrapped__  # typer reads the signature below, not func's
        command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return decorate if func is None else decorate(func)


def write_by_id(operation: Callable[[Memory, str], WriteResult], doc: str) -> Callable[..., None]:
    """A command ``NAME ID [--json]`` that runs one write of ``Memory`` on the memory
    and prints its result (delete, pin, unpin)."""

    def command(mem: Memory, memory_id: MemoryIdArg, as_json: JsonOpt = False) -> None:
        print_write(operation(mem, memory_id), as_json)

    command.__doc__ = doc
    return opens_memory(command)
