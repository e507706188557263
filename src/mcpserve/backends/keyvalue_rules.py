"""What every key-value store checks and raises the same way, so that a caller moved from
one store to another (memory in tests, SQLite on one machine, Redis in a cluster) sees the
same answers to the same mistakes.

* A life (``ttl``) is a positive number of seconds, at most ten years: zero, a negative
  number, NaN (which compares false to everything, so a record would never expire),
  infinity and a life whose end Redis's clock could not hold are refused with
  :class:`ValueError` by every operation that takes one, before the store is touched.
  ``put`` alone also takes None: no life, the record stays until deleted.
* A value is :class:`bytes`: SQLite would keep a ``str`` as text and give back a ``str``,
  and Redis would encode it, so each store would answer differently; a ``TypeError`` says so.
* A counter is kept as its decimal digits (``b"3"``): ``incr`` of a key that holds
  anything else raises :class:`ValueError`, as Redis's ``INCR`` refuses it.
* A token bucket (``take_token``) is kept as two decimal numbers, the tokens left and
  when they were counted (``b"4.5 1700000000.25"``); its ``rate`` and ``burst`` are
  positive, finite numbers (``ValueError`` otherwise), and a key holding anything else is
  refused with ``ValueError``, as ``incr`` refuses one that holds no counter.
* A store that cannot be reached, or fails, raises :class:`StoreUnavailable`.

The stores import this module, and ``keyvalue.py`` imports the stores when a URL names
them, so these rules live here rather than there (an import cycle otherwise).
"""

from __future__ import annotations

import math
import re

#: What ``incr`` accepts as a counter: an optional minus sign and at most 19 decimal digits
#: (Redis counts in 64 bits).
_COUNTER = re.compile(rb"-?[0-9]{1,19}")


class StoreUnavailable(Exception):
    """The store cannot be reached or failed; the operation may not have happened."""


#: The longest life a record may be given (ten years): Redis refuses an expiry whose end
#: overflows its clock, which would read as the store being down.
MAX_TTL = 10 * 365 * 24 * 3600


def check_ttl(ttl: float) -> None:
    """Refuse a life that is not a positive number of seconds, at most :data:`MAX_TTL`."""
    if not 0 < ttl <= MAX_TTL:
        raise ValueError(
            f"ttl must be a positive number of seconds, at most {MAX_TTL} (ten years), not "
            f"{ttl!r}; leave it out (None) for a record that never expires"
        )


def check_life(ttl: float | None) -> None:
    """Refuse what :func:`check_ttl` refuses, but let None (no expiry) through."""
    if ttl is not None:
        check_ttl(ttl)


def check_value(value: bytes) -> None:
    """Refuse a value that is not bytes."""
    if not isinstance(value, bytes):
        raise TypeError(f"A value must be bytes, not {type(value).__name__}")


def counter_value(key: str, raw: bytes) -> int:
    """The count a counter's stored digits hold; ValueError when they are not a counter."""
    if _COUNTER.fullmatch(raw) is None:
        raise not_a_counter(key)
    return int(raw)


def not_a_counter(key: str) -> ValueError:
    """The error of ``incr`` on a key that holds something other than a counter."""
    return ValueError(f"{key[:60]!r} holds something other than a counter: incr cannot count it")


def check_bucket(rate: float, burst: float) -> None:
    """Refuse a bucket whose rate or size is not a positive, finite number."""
    if not 0 < rate < math.inf:
        raise ValueError(f"rate must be a positive, finite number of tokens a second, not {rate!r}")
    if not 1 <= burst < math.inf:
        raise ValueError(f"burst must be a finite number of tokens, at least 1, not {burst!r}")


def bucket_state(key: str, raw: bytes) -> tuple[float, float]:
    """The tokens a bucket's record holds, and when they were counted."""
    parts = raw.split(b" ")
    try:
        tokens, counted = float(parts[0]), float(parts[1])
    except (ValueError, IndexError):
        raise not_a_bucket(key) from None
    if len(parts) != 2 or not (math.isfinite(tokens) and math.isfinite(counted)):
        raise not_a_bucket(key)
    return tokens, counted


def refill(
    held: tuple[float, float] | None, now: float, rate: float, burst: float
) -> tuple[float, float, float]:
    """One token taken from a bucket (``held``: its tokens and when they were counted, or
    None for a full one): the tokens left, the seconds to wait when there was none (0.0
    when one was taken), and the seconds until the bucket is full again (its record's life)."""
    tokens = burst
    if held is not None:
        tokens = min(burst, held[0] + max(0.0, now - held[1]) * rate)
    wait = 0.0
    if tokens >= 1:
        tokens -= 1
    else:
        wait = (1 - tokens) / rate
    return tokens, wait, max((burst - tokens) / rate, 0.001)


def bucket_record(tokens: float, now: float) -> bytes:
    """A bucket as its record holds it."""
    return f"{tokens!r} {now!r}".encode()


def not_a_bucket(key: str) -> ValueError:
    """The error of ``take_token`` on a key that holds something other than a bucket."""
    return ValueError(f"{key[:60]!r} holds something other than a token bucket")
