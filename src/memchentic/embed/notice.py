"""Say on a terminal what takes a while: a model export, a model load, a table build.

A message goes to the log (``memchentic.embed``, INFO) and, when stderr is a
terminal, to stderr as well, so a user who typed a command learns why it waits;
a pipe, a server's log or a test sees only the log record. :func:`progress`
draws a bar (``rich``, a dependency of memchentic) on the same terms.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["announce", "on_terminal", "progress", "quiet_loading"]

log = logging.getLogger("memchentic.embed")


def on_terminal() -> bool:
    """Whether stderr is a terminal (a person may be waiting on it)."""
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def announce(message: str) -> None:
    """Log ``message``; print it on stderr too when stderr is a terminal."""
    log.info(message)
    if on_terminal():
        print(f"memchentic: {message}", file=sys.stderr, flush=True)


@contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A ``report(done, total)`` callable for the block: a bar on stderr when it is a
    terminal, log records at start and end otherwise."""
    announce(f"{label}...")
    if not on_terminal():
        yield lambda done, total: None
        log.info("%s: done", label)
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)  # fmt: skip
    with bar:
        task = bar.add_task(label, total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield report
    log.info("%s: done", label)


@contextmanager
def quiet_loading() -> Iterator[None]:
    """Load a transformers model without its "Loading weights" bar on stderr, and
    without library notices about future defaults (not actionable for memchentic users;
    loading must never fail a caller that turns warnings into errors)."""
    tlog: Any = None
    previous_hook: Any = None
    try:  # set_tqdm_hook exists in transformers >= 5; older ones draw no bar here
        from transformers.utils import logging as tlog

        previous_hook = tlog.set_tqdm_hook(
            lambda _factory, args, kwargs: tlog.EmptyTqdm(*args, **kwargs)
        )
    except (ImportError, AttributeError):
        tlog = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        if tlog is not None:
            tlog.set_tqdm_hook(previous_hook)
