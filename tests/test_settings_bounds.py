"""Every numeric setting has bounds, checked when the settings are read: an infinite,
NaN, huge or negative value is refused at start-up (``Memory()``, ``memchentic
serve``) with an error naming the setting and its bounds, never by the first
write that uses it (a raw ``OverflowError`` from ``MEMORY_DEFAULT_TTL_DAYS=1e7``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import annotated_types as at
import pytest

from memchentic import Memory
from memchentic.errors import ValidationError
from memchentic.settings import Settings, env_name, load_settings

NUMERIC = sorted(
    name
    for name, field in Settings.model_fields.items()
    if field.annotation in (int, float, int | None, float | None)
)


def _bounds(name: str) -> tuple[float, float, bool]:
    """(lowest, highest, whether the lowest itself is refused) of a setting."""
    low, high, open_low = -math.inf, math.inf, False
    for rule in Settings.model_fields[name].metadata:
        if isinstance(rule, at.Ge):
            low = float(rule.ge)  # type: ignore[arg-type]
        elif isinstance(rule, at.Gt):
            low, open_low = float(rule.gt), True  # type: ignore[arg-type]
        elif isinstance(rule, at.Le):
            high = float(rule.le)  # type: ignore[arg-type]
        elif isinstance(rule, at.Lt):
            high = float(rule.lt)  # type: ignore[arg-type]
    return low, high, open_low


def _bad_values(name: str) -> list[str]:
    low, high, _ = _bounds(name)
    values = ["inf", "-inf", "nan", "1e7" if high < 1e7 else "1e300", "1" + "0" * 40, "ten"]
    if low >= 0:
        values.append("-1")
    return values


def test_the_numeric_settings_are_found() -> None:
    assert len(NUMERIC) >= 70
    assert {"memory_default_ttl_days", "record_default_ttl_days", "rrf_k",
            "search_max_limit", "openai_embedding_dimension"} <= set(NUMERIC)  # fmt: skip


@pytest.mark.parametrize("name", NUMERIC)
def test_every_numeric_setting_has_finite_bounds(name: str) -> None:
    low, high, _ = _bounds(name)
    assert math.isfinite(low) and math.isfinite(high), (name, low, high)
    default = Settings.model_fields[name].default
    assert default is None or low <= default <= high, (name, default)


@pytest.mark.parametrize("name", NUMERIC)
def test_a_bad_value_is_refused_naming_the_setting_and_its_bounds(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    documented = env_name(name)
    low, high, _ = _bounds(name)
    for value in _bad_values(name):
        monkeypatch.setenv(f"MEMCHENTIC_{documented}", value)
        with pytest.raises(ValidationError) as err:
            load_settings()
        assert err.value.field == documented, (value, err.value)
        rule = err.value.rule
        assert "number" in rule and _shown(high) in rule and _shown(low) in rule, (value, rule)
    monkeypatch.delenv(f"MEMCHENTIC_{documented}")
    for value in (math.inf, math.nan, 10**40, -(10**40)):  # in code, as in the environment
        with pytest.raises(ValidationError) as err:
            load_settings(**{name: value})
        assert err.value.field == documented


@pytest.mark.parametrize("name", NUMERIC)
def test_the_bounds_themselves_are_accepted(name: str) -> None:
    low, high, open_low = _bounds(name)
    integer = Settings.model_fields[name].annotation in (int, int | None)
    for value in [high] if open_low else [low, high]:
        given: Any = int(value) if integer else value
        assert getattr(load_settings(**{name: given}), name) == given


def _shown(bound: float) -> str:
    return str(int(bound)) if bound == int(bound) else str(bound)


@pytest.mark.parametrize("setting", ["MEMORY_DEFAULT_TTL_DAYS", "RECORD_DEFAULT_TTL_DAYS",
                                     "WORKING_MEMORY_TTL_DAYS"])  # fmt: skip
@pytest.mark.parametrize("value", ["1e7", "inf", "nan"])
def test_a_lifetime_that_would_overflow_fails_at_start_up_not_at_write_time(
    setting: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(setting, value)  # the documented name, unprefixed
    with pytest.raises(ValidationError) as err:
        Memory(tmp_path / "m.db", embedder="hash")
    assert err.value.field == setting
    assert "days" in err.value.rule and "365000" in err.value.rule
    assert not (tmp_path / "m.db").exists()  # refused before the store was opened


def test_the_longest_default_lifetime_still_writes(tmp_path: Path) -> None:
    """At its bound, a default lifetime gives a date a store keeps."""
    days = Settings.model_fields["memory_default_ttl_days"]
    high = _bounds("memory_default_ttl_days")[1]
    assert days.default < high
    settings = Settings(memory_default_ttl_days=high, record_default_ttl_days=high)
    with Memory(tmp_path / "m.db", embedder="hash", settings=settings) as mem:
        added = mem.add("Wendeline keeps the ledger in the attic")
        logged = mem.add_message({"role": "user", "content": "the ledger is in the attic"})
        assert added.memory is not None and added.memory.expires_at is not None
        assert added.memory.expires_at.year > 2900 and logged is not None


def test_serve_refuses_a_bad_setting_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("uvicorn")
    import uvicorn
    from typer.testing import CliRunner

    from memchentic.cli import app

    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(k))
    monkeypatch.setenv("MEMCHENTIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORY_DEFAULT_TTL_DAYS", "1e7")
    result = CliRunner().invoke(app, ["serve", "--store", str(tmp_path / "m.db"),
                                      "--embedder", "hash"])  # fmt: skip
    assert result.exit_code != 0 and started == []
    said = " ".join(result.output.split())
    assert "MEMORY_DEFAULT_TTL_DAYS" in said and "365000" in said, said


@pytest.mark.parametrize("value", [1e7, math.inf, math.nan])
def test_settings_copied_without_checks_still_fail_cleanly_at_write_time(
    value: float, tmp_path: Path
) -> None:
    """``model_copy(update=...)`` checks nothing: a write that takes the default then
    says which setting is out of its bounds (no raw ``OverflowError``), and stores nothing."""
    unchecked = Settings().model_copy(update={"memory_default_ttl_days": value})
    with Memory(tmp_path / "m.db", embedder="hash", settings=unchecked) as mem:
        with pytest.raises(ValidationError) as err:
            mem.add("Wendeline keeps the ledger in the attic")
        assert err.value.field == "MEMORY_DEFAULT_TTL_DAYS" and "365000" in err.value.rule
        assert mem.add("Wendeline keeps the ledger", ttl_days=3).status == "added"
        assert len(mem.list()) == 1
