"""``Memory``: the embedded engine.

It is the services of :mod:`memchentic.engine` put together; each service adds one
group of the operations listed in :mod:`memchentic.operations`, on the parts and
shared steps of :class:`~memchentic.engine.core.Core`. Every call validates its
input, asks the access module, then runs the write path or the read path against
the store.
"""

from __future__ import annotations

from .engine.context import ContextOps
from .engine.learning import Learning
from .engine.upkeep import Upkeep
from .operations import OPERATIONS
from .tracing import traced_operation


class Memory(Upkeep, ContextOps, Learning):
    """Long-term memory for an agent, embedded.

    :param path: store file (or ``store=`` a path or URL); default ``~/.memchentic/memory.db``.
    :param embedder: ``"local"``, ``"hash"``, ``"openai"`` or an :class:`Embedder`.
    :param settings: a :class:`Settings`; default: read from the environment.
    :param resolver: decides what a new entry is to its neighbours (duplicate,
        update, contradiction); default: the rules, or the chat model with
        ``WRITE_RESOLVER=chat`` (:mod:`memchentic.write.resolvers`).
    """


def _trace_operations() -> None:
    """Every operation of the table in a span (and timed for ``/metrics``): one place,
    so a new operation is traced when the table names it (:mod:`memchentic.tracing`)."""
    for op in OPERATIONS:
        method = getattr(Memory, op.name)
        traced = traced_operation(op.name, op.group, method)
        for name in (op.name, *op.aliases):
            setattr(Memory, name, traced)


_trace_operations()
