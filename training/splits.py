"""Fixed train/validation splits: membership is a hash of a key, so it depends on no row order and no seed."""

from __future__ import annotations

import hashlib


def stable_fraction(key: str) -> float:
    """A number in [0, 1) fixed by the key."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 16**8


def in_validation_split(key: str, fraction: float) -> bool:
    return stable_fraction(key) < fraction
