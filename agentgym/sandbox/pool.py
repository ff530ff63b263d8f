"""A warm pool of sandboxes: started once, health-checked and reset between users, replaced when dead.

Taking a sandbox from the pool costs one reset (kill every process, empty the work dir) instead of a container
start. ``get_pool`` keeps one pool per set of creation arguments for the whole process; every pooled sandbox is
also closed at interpreter exit and on SIGTERM (see ``base.close_all``).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypedDict

from agentgym.sandbox.base import Sandbox, SandboxError, WorkerLost

if TYPE_CHECKING:
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class PoolStats(TypedDict):
    """What a pool holds at one moment (`SandboxPool.stats`, `pool_stats`)."""

    size: int  # sandboxes the pool keeps
    idle: int  # ready to be acquired now
    in_use: int  # acquired and not yet released
    closed: bool  # closed pools hold nothing and refuse acquire
    backend: str  # the backend asked for: "docker", "local", or "auto" (see `Sandbox.create`)
    backends: list[str]  # the backends its sandboxes actually run on (an "auto" pool says which it chose)


class SandboxPool:
    """``size`` warm sandboxes made with ``Sandbox.create(**create_kwargs)``.

    ``acquire()`` returns a healthy, clean sandbox; ``release(sandbox)`` (or ``sandbox.close()``) gives it back.
    Use the pool as a context manager or call :meth:`close`.
    """

    def __init__(self, size: int = 4, **create_kwargs: Any) -> None:
        if size < 1:
            raise ValueError(f"a pool needs at least one sandbox, got size={size}")
        self.size = size
        self.create_kwargs = create_kwargs
        self._condition = threading.Condition()
        self._closed = False
        self._dirty: set[int] = set()
        with ThreadPoolExecutor(max_workers=min(size, 8)) as executor:
            self._all: list[Sandbox] = list(executor.map(lambda _: Sandbox.create(**create_kwargs), range(size)))
        self._idle: list[Sandbox] = list(self._all)

    def acquire(self, timeout: float | None = None) -> Sandbox:
        """Return a sandbox that answers and is clean, waiting up to ``timeout`` seconds for one to be released.

        A sandbox whose supervisor is gone is restarted; one that cannot be restarted is replaced.

        Raises:
            SandboxError: if the pool is closed, none is released in time, or no replacement can be created.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while not self._idle:
                if self._closed:
                    raise SandboxError("the pool is closed")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise SandboxError(f"no sandbox was released within {timeout} s; all {self.size} are in use "
                                       "(make the pool bigger or release sandboxes when done)")
                self._condition.wait(remaining)
            if self._closed:
                raise SandboxError("the pool is closed")
            sandbox = self._idle.pop()
            dirty = id(sandbox) in self._dirty
            self._dirty.discard(id(sandbox))
        try:
            self._make_ready(sandbox, dirty)
        except SandboxError as error:
            logger.warning("replacing pooled sandbox %r: %s", sandbox, error)
            sandbox._destroy()
            replacement = Sandbox.create(**self.create_kwargs)
            with self._condition:
                self._all = [replacement if item is sandbox else item for item in self._all]
            sandbox = replacement
        sandbox._pool = self
        return sandbox

    @staticmethod
    def _make_ready(sandbox: Sandbox, dirty: bool) -> None:
        if sandbox.closed:
            raise SandboxError("it was closed")
        if dirty:
            sandbox.reset()  # also the health check: a dead supervisor is restarted inside reset
        elif not sandbox.ping():
            sandbox._recover(WorkerLost("it failed the health check"))

    def release(self, sandbox: Sandbox) -> None:
        """Give a sandbox back; it is reset before its next use. A pool that is closed destroys it instead."""
        sandbox._pool = None
        with self._condition:
            if self._closed or sandbox not in self._all:
                sandbox._destroy()
                return
            if sandbox in self._idle:
                return
            self._dirty.add(id(sandbox))
            self._idle.append(sandbox)
            self._condition.notify()

    def stats(self) -> PoolStats:
        """How many sandboxes are idle and in use, and on which backend (a consistent snapshot)."""
        with self._condition:
            held, idle, closed = list(self._all), len(self._idle), self._closed
        return PoolStats(size=self.size, idle=idle, in_use=len(held) - idle, closed=closed,
                         backend=str(self.create_kwargs.get("backend", "auto")),
                         backends=sorted({sandbox.backend for sandbox in held}))

    def close(self) -> None:
        """Destroy every sandbox of the pool, in use or not (idempotent)."""
        with self._condition:
            self._closed = True
            sandboxes, self._all, self._idle = self._all, [], []
            self._condition.notify_all()
        with ThreadPoolExecutor(max_workers=8) as executor:
            list(executor.map(lambda sandbox: sandbox._destroy(), sandboxes))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_pools: dict[str, SandboxPool] = {}
_pools_lock = threading.Lock()


def get_pool(size: int = 4, **create_kwargs: Any) -> SandboxPool:
    """Return the process-wide pool for these arguments, creating it on first use.

    Pools are keyed by ``size`` and ``create_kwargs``; they are closed at interpreter exit and on SIGTERM.
    """
    key = repr((size, sorted(create_kwargs.items())))
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool._closed:
            pool = _pools[key] = SandboxPool(size, **create_kwargs)
        return pool


def pool_stats() -> list[PoolStats]:
    """`SandboxPool.stats` of every pool `get_pool` holds for this process, oldest first (one closed by hand is
    listed with `closed` until `get_pool` replaces it; `close_pools` forgets them all). `agentgym serve`'s
    `/health` reports these as its sandbox pools."""
    with _pools_lock:
        pools = list(_pools.values())
    return [pool.stats() for pool in pools]


def close_pools() -> None:
    """Close every pool ``get_pool`` made (they otherwise live until interpreter exit)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()
