"""Timing helpers shared by the benchmarks (not a benchmark itself: `run_all.py` skips `_*.py`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_ms(function: Callable[[], object], repeats: int, warmup: int = 3) -> float:
    """Median wall time of `function` in milliseconds, after `warmup` untimed calls."""
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def figure(value: float, target: str, ok: bool, digits: int = 3) -> dict[str, Any]:
    """One benchmark figure as `make bench` summarises it."""
    return {"value": round(value, digits), "target": target, "ok": bool(ok)}
