"""Lifetime (DESIGN section 6): expiry at write, renewal on recall, decay, gc rules."""

from __future__ import annotations

import math
from datetime import datetime

from .clock import age_days, days
from .errors import ValidationError
from .settings import Settings


def initial_expiry(
    now: datetime,
    settings: Settings,
    *,
    ttl_days: float | None = None,
    permanent: bool = False,
    expires_at: datetime | None = None,
) -> datetime | None:
    """Expiry of a write: ``expires_at`` > permanent / ``ttl_days=0`` > ``ttl_days`` > default."""
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
    default = settings.memory_default_ttl_days
    return None if default == 0 else now + days(default)


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


def decay_floor_age_days(settings: Settings) -> float:
    """Smallest age at which even confidence 1 decays under the floor (gc pre-filter)."""
    if settings.memory_decay_floor <= 0:
        return math.inf
    return settings.memory_decay_half_life_days * math.log2(1.0 / settings.memory_decay_floor)
