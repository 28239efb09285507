"""Lifetime (docs/design.md, section 6): expiry at write, renewal on recall, decay, gc rules."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from .clock import age_days, days
from .errors import ValidationError
from .settings import Settings, bounds_rule


def initial_expiry(
    now: datetime,
    settings: Settings,
    *,
    ttl_days: float | None = None,
    permanent: bool = False,
    expires_at: datetime | None = None,
    speech: bool = False,
) -> datetime | None:
    """Expiry of a write: ``expires_at`` > permanent / ``ttl_days=0`` > ``ttl_days`` > default.

    The default is ``MEMORY_DEFAULT_TTL_DAYS``, or for a record of what was said
    (``speech``: a logged turn) ``RECORD_DEFAULT_TTL_DAYS`` (0 = never; issue 31,
    item 8); 0 means permanent in both."""
    if expires_at is not None:
        return expires_at
    if permanent:
        return None
    if ttl_days is not None:
        if (
            isinstance(ttl_days, bool)
            or not isinstance(ttl_days, int | float)
            or not math.isfinite(float(ttl_days))
            or ttl_days < 0
        ):
            raise ValidationError("ttl_days", "must be a finite number >= 0 (0 = permanent)")
        if ttl_days == 0:
            return None
        try:
            return now + days(float(ttl_days))
        except OverflowError as exc:
            raise ValidationError("ttl_days", "ends after the year 9999") from exc
    default = settings.record_default_ttl_days if speech else settings.memory_default_ttl_days
    if default == 0:
        return None
    try:  # bounded when the settings are read; model_copy(update=...) checks nothing
        return now + days(default)
    except (OverflowError, ValueError) as exc:
        name = "RECORD_DEFAULT_TTL_DAYS" if speech else "MEMORY_DEFAULT_TTL_DAYS"
        raise ValidationError(name, f"must be {bounds_rule(name.lower())}") from exc


def renewed_expiry(
    expires_at: datetime | None, created_at: datetime, now: datetime, settings: Settings
) -> datetime | None:
    """``max(expires, min(now + E, created + M))``; never shortens, permanent stays permanent."""
    if expires_at is None:
        return None
    target = now + days(settings.memory_ttl_extend_days)
    if settings.memory_max_ttl_days > 0:
        target = min(target, created_at + days(settings.memory_max_ttl_days))
    return max(expires_at, target)


def should_count_recall(last: datetime | None, now: datetime, settings: Settings) -> bool:
    """A recall counts at most once per debounce window."""
    if last is None:
        return True
    return (now - last).total_seconds() >= settings.memory_ttl_touch_debounce_hours * 3600


def decayed_confidence(
    confidence: float, created_at: datetime | None, now: datetime, half_life_days: float
) -> float:
    """``confidence x exp(-ln2 / half_life x age)``; a future ``created_at`` does not decay."""
    age = age_days(now, created_at)
    return confidence * math.exp(-math.log(2) / half_life_days * age)


@dataclass(frozen=True)
class DecayScan:
    """The gc pre-filter for decay: a memory idle for less than
    ``days_per_confidence x (confidence - floor)`` days at ``now`` cannot have
    decayed under the floor, so storage need not return it.

    The exact rule is ``confidence x 2^(-idle / half_life) < floor``, that is
    ``idle > half_life x log2(confidence / floor)``. ``log2`` is concave, so its chord
    between the floor and confidence 1 lies under it: the pre-filter is linear in the
    confidence (core SQL on both backends), never misses a due memory, is exact at
    confidence 1 and lets through some memories of lower confidence a little early,
    which the exact check then keeps (issue 20, item 9: the pre-filter used to assume
    confidence 1 for every memory)."""

    now: datetime
    floor: float
    days_per_confidence: float


def decay_scan(settings: Settings, now: datetime) -> DecayScan | None:
    """The :class:`DecayScan` of these settings; None when nothing decays under the
    floor (a floor of 0)."""
    floor = settings.memory_decay_floor
    if floor <= 0:
        return None
    if floor >= 1:  # every memory below confidence 1 is under the floor from the start
        return DecayScan(now, floor, 0.0)
    slope = settings.memory_decay_half_life_days * math.log2(1.0 / floor) / (1.0 - floor)
    return DecayScan(now, floor, slope)
