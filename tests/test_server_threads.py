"""``memchentic serve`` runs BLAS on one thread per process (server/threads.py; issue
36, item 4): a thread pool per product only makes concurrent requests wait."""

from __future__ import annotations

import os

import pytest

from memchentic.server.threads import BLAS_THREAD_VARIABLES, limit_blas_threads

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def restore_blas():
    before = threadpoolctl.threadpool_info()
    yield
    for pool in before:
        if pool["user_api"] == "blas":
            threadpoolctl.threadpool_limits(pool["num_threads"], user_api="blas")


def test_one_blas_thread_unless_the_environment_names_a_count(
    monkeypatch: pytest.MonkeyPatch, restore_blas: None
):
    for name in BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert limit_blas_threads() is True
    assert _blas_threads() and set(_blas_threads()) == {1}
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"  # for the workers it starts


def test_a_count_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch, restore_blas: None):
    threadpoolctl.threadpool_limits(2, user_api="blas")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert limit_blas_threads() is False
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    assert set(_blas_threads()) == {2}


def test_a_worker_hands_the_interpreter_lock_over_every_millisecond():
    import sys

    from memchentic.server.threads import DEFAULT_SWITCH_INTERVAL, SWITCH_INTERVAL, quicker_handoffs

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(DEFAULT_SWITCH_INTERVAL)
        assert quicker_handoffs() is True
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
        sys.setswitchinterval(0.01)  # the application chose one: kept
        assert quicker_handoffs() is False
        assert sys.getswitchinterval() == pytest.approx(0.01)
    finally:
        sys.setswitchinterval(before)


def test_only_a_sqlite_store_gets_the_shorter_interval(tmp_path):
    import sys

    from memchentic.server.threads import DEFAULT_SWITCH_INTERVAL, SWITCH_INTERVAL, handoffs_for
    from memchentic.store.sqlite import SQLiteStore

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(DEFAULT_SWITCH_INTERVAL)
        assert handoffs_for(object()) is False  # a server database (or any other store)
        assert sys.getswitchinterval() == pytest.approx(DEFAULT_SWITCH_INTERVAL)
        store = SQLiteStore(tmp_path / "m.db")
        try:
            assert handoffs_for(store) is True
        finally:
            store.close()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    finally:
        sys.setswitchinterval(before)
