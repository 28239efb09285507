"""Spans around operations and search stages (OpenTelemetry, optional), and the
timing hook the server's metrics read.

With ``opentelemetry-api`` installed (the ``[otel]`` extra adds the SDK) and a tracer
provider configured by the application, :func:`span` opens a span under the current
one; without either it hands back one shared object that does nothing, so tracing
costs a function call and no allocation (nothing measurable next to a search).

Span attributes are the operation's name and group, counts and sizes only: never the
caller's identity, a namespace, a user, agent or session id, an API key, a query or
a memory's content (``tests/test_tracing.py`` checks it). An exception marks its
span as failed with ``error.type`` (the exception's class), never its message.

:func:`traced_operation` wraps an engine operation: a span named
``memchentic.<operation>`` and, for the outermost operation of a call (an operation
that runs another, as ``context`` runs ``search``, is timed once), the observers
added with :func:`observe` (the server's ``/metrics``).
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from time import perf_counter
from typing import Any, Protocol, TypeVar

try:  # the API comes with FastAPI and MCP; spans are recorded once an SDK is set up
    from opentelemetry import trace as _otel
    from opentelemetry.trace import StatusCode as _StatusCode
except ImportError:  # pragma: no cover - the [otel] or [server] extra is missing
    _otel = None  # type: ignore[assignment]

#: The instrumentation scope of memchentic's spans.
TRACER_NAME = "memchentic"

F = TypeVar("F", bound=Callable[..., Any])
AttributeValue = str | bool | int | float


class SpanLike(Protocol):
    """What :func:`span` yields: an OpenTelemetry span, or the no-op one."""

    def set_attribute(self, key: str, value: AttributeValue) -> Any: ...

    def is_recording(self) -> bool: ...


class _NoSpan:
    """The span of a process that does not trace: one shared object, doing nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None

    def is_recording(self) -> bool:
        return False


NO_SPAN = _NoSpan()


class _NoTracer:
    """``tracer`` where OpenTelemetry is not installed."""

    def start_as_current_span(self, name: str, **options: Any) -> _NoSpan:
        return NO_SPAN


#: memchentic's tracer: OpenTelemetry's (a proxy that follows the provider the
#: application sets, even later), or a shim that makes no-op spans.
tracer: Any = _otel.get_tracer(TRACER_NAME) if _otel is not None else _NoTracer()


_UNKNOWN = object()


def active() -> bool:
    """Whether spans are recorded: OpenTelemetry is installed and a tracer provider
    (an SDK's) has been set; the API's default proxy records nothing."""
    if _otel is None:
        return False
    # The API's global, read directly: get_tracer_provider() looks in os.environ on
    # every call while none is set (microseconds, on every span and operation).
    provider = getattr(_otel, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is _UNKNOWN:  # another version of the API: the public way
        provider = _otel.get_tracer_provider()
    return provider is not None and not isinstance(provider, _otel.ProxyTracerProvider)


def span(
    name: str, attributes: Mapping[str, AttributeValue] | None = None
) -> Any:  # a context manager yielding a SpanLike
    """A span named ``name`` under the current one for the ``with`` block (a shared
    no-op when nothing records spans). ``attributes``: counts and names, never what
    a caller wrote or who the caller is."""
    if not active():
        return NO_SPAN
    return _recorded(name, attributes)


@contextmanager
def _recorded(name: str, attributes: Mapping[str, AttributeValue] | None) -> Iterator[Any]:
    # Exceptions are recorded by their class alone: a message may quote input.
    with tracer.start_as_current_span(
        name, attributes=dict(attributes or {}), record_exception=False,
        set_status_on_exception=False,
    ) as current:  # fmt: skip
        try:
            yield current
        except Exception as exc:
            current.set_attribute("error.type", type(exc).__qualname__)
            current.set_status(_StatusCode.ERROR)
            raise


def in_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` bound to the current context (and so to the current span), for a call
    on another thread: a thread pool does not carry context on its own."""
    if not active():
        return fn
    ctx = contextvars.copy_context()
    return functools.partial(ctx.run, fn)


# --- operations and their observers ------------------------------------------------------

#: An observer of operations: (the engine object, operation, group, seconds, failed).
Observer = Callable[[object, str, str, float, bool], None]

_observers: tuple[Observer, ...] = ()
_observers_lock = threading.Lock()
#: How deep in operations the current call is (0: outside any).
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("memchentic_op_depth", default=0)


def observe(observer: Observer) -> Callable[[], None]:
    """Call ``observer`` after each outermost operation of this process; returns the
    function that stops it. An observer must be quick and must not raise."""
    global _observers
    with _observers_lock:
        _observers = (*_observers, observer)

    def stop() -> None:
        global _observers
        with _observers_lock:
            _observers = tuple(o for o in _observers if o is not observer)

    return stop


def traced_operation(name: str, group: str, method: F) -> F:
    """``method`` (an engine operation) in a span ``memchentic.<name>``, timed for
    the observers when it is the outermost operation of the call."""
    attributes = {"memchentic.operation": name, "memchentic.group": group}
    span_name = f"memchentic.{name}"

    @functools.wraps(method)
    def run(self: object, *args: Any, **kwargs: Any) -> Any:
        observers = _observers
        tracing = active()
        if not observers and not tracing:
            return method(self, *args, **kwargs)
        token = _depth.set(_depth.get() + 1)
        started = perf_counter()
        failed = True
        try:
            if tracing:
                with _recorded(span_name, attributes):
                    result = method(self, *args, **kwargs)
            else:
                result = method(self, *args, **kwargs)
            failed = False
            return result
        finally:
            _depth.reset(token)
            if observers and _depth.get() == 0:
                seconds = perf_counter() - started
                for observer in observers:
                    observer(self, name, group, seconds, failed)

    return run  # type: ignore[return-value]
