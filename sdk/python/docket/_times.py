"""Timestamps of the HTTP contract (RFC 3339, as Go writes them)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

# Go writes up to nine fractional digits; datetime keeps six.
_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime; None for null or junk."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(_FRACTION.sub(r"\1", value))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when


def format_time(when: datetime) -> str:
    """An aware datetime as RFC 3339 (a naive one is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.isoformat()
