"""cProfile's tables as the benches print them (``--profile N``)."""

from __future__ import annotations

import cProfile
import io
import pstats


def profile_tables(profiler: cProfile.Profile, count: int) -> dict[str, str]:
    """The top ``count`` functions by own time (``tottime``) and by cumulative
    time, each as pstats prints it from its header line on."""
    tables = {}
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(key).print_stats(count)
        text = out.getvalue()
        tables[key] = text[text.find("   ncalls") :].rstrip() + "\n"
    return tables
