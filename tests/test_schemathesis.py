"""Property-based tests of the HTTP API from its own OpenAPI spec (schemathesis):
whatever a client sends to the memories and search routes, valid or not, the
answer is never a 500 and every error is JSON with a ``code``. Bounded: a few
dozen cases per route and mode, against a real uvicorn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

from .live_server import Live, live_server  # noqa: E402

#: Cases per route and generation mode (kept small: the suite must stay fast).
EXAMPLES = 20
ROUTES = r"^/v1/(memories|search)"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(tmp_path_factory.mktemp("fuzz"), mcp=False, console=False) as server:
        alice = server.mem.for_identity("alice")
        alice.add("Alice's favourite colour is teal", tags=["profile"])
        alice.add("Alice runs a 10k every Saturday", type="episodic")
        yield server


def _operations(live: Live) -> list[object]:
    schema = schemathesis.openapi.from_url(f"{live.url}/openapi.json")
    found = [r.ok() for r in schema.include(path_regex=ROUTES).get_all_operations()]
    assert len(found) >= 10, "the memories and search routes are in the spec"
    return found


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_memories_and_search_never_answer_500(live: Live, mode: GenerationMode):
    headers = {"Authorization": f"Bearer {live.keys['alice']}"}
    failures: list[str] = []
    for operation in _operations(live):

        @settings(
            max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(case=operation.as_strategy(generation_mode=mode))  # type: ignore[attr-defined]
        def check(case: object) -> None:
            response = case.call(base_url=live.url, headers=headers)  # type: ignore[attr-defined]
            if response.status_code >= 500:
                failures.append(f"{case!r} -> {response.status_code} {response.text[:200]}")
            elif response.status_code >= 400:
                assert "code" in response.json()["error"], response.text

        check()
    assert failures == []
