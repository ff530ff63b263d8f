"""Where agentgym keeps data it builds once and reuses (databases, populations, task sets, indexes, images),
and how a build tells the user about itself.

The cache holds graders' data (task answers, expected states, hidden tests, gold results), so its root is
private to the user who owns it (mode 0700): a sandbox process running under another uid cannot read it.

Every build of cached data runs inside `building(...)`: before it starts, one line on stderr says what is
built, roughly how long it takes and where it goes; progress follows; a last line says how long it took.
`no_builds()` turns every such build into a `NotBuilt` error instead, so a command that only wants what is
already cached (`agentgym list`) never starts one. Plugins should wrap their own builds the same way.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

QUIET_VARIABLE = "AGENTGYM_QUIET"


def cache_root() -> Path:
    """`$AGENTGYM_CACHE` (default `$XDG_CACHE_HOME/agentgym`, else `~/.cache/agentgym`), not created."""
    root = os.environ.get("AGENTGYM_CACHE")
    if root:
        return Path(root).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "agentgym"


def _make_private(base: Path) -> None:
    """Create `base` with mode 0700, or tighten it to 0700 when this user owns it and others can enter it."""
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        info = base.stat()
        if info.st_uid == os.getuid() and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            base.chmod(0o700)
    except OSError:
        pass  # a cache on a file system without permissions (or not ours): nothing this process can tighten


def cache_dir(*parts: str) -> Path:
    """`cache_root()/PARTS`, created; the root is made private to its owner (see the module docstring)."""
    base = cache_root()
    _make_private(base)
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


class NotBuilt(RuntimeError):
    """A build was asked for inside `no_builds()`: the data is not cached yet and was not built."""

    def __init__(self, what: str, path: Path | str) -> None:
        super().__init__(f"{what} is not built yet ({path})")
        self.what = what
        self.path = Path(path)


_refusals = 0  # depth of open no_builds() blocks, process-wide: a build on a worker thread is refused too
_refusals_lock = threading.Lock()


@contextlib.contextmanager
def no_builds() -> Iterator[None]:
    """Within this block every `building(...)` raises `NotBuilt` before doing anything."""
    global _refusals
    with _refusals_lock:
        _refusals += 1
    try:
        yield
    finally:
        with _refusals_lock:
            _refusals -= 1


def _quiet() -> bool:
    return os.environ.get(QUIET_VARIABLE, "") not in ("", "0", "false", "no")


def _say(line: str) -> None:
    if not _quiet():
        print(line, file=sys.stderr, flush=True)


class BuildProgress:
    """Progress of one build, shown on stderr: a line redrawn in place at a terminal (at most 5 times a
    second), elsewhere (a log, a pipe) one line at each further quarter done or every 15 s."""

    def __init__(self, what: str, total: int | None, unit: str) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.done = 0
        self._terminal = sys.stderr.isatty()
        self._started = time.monotonic()
        self._last_shown = self._started
        self._last_quarter = 0
        self._drawn = False
        self._lock = threading.Lock()

    def advance(self, amount: int = 1) -> None:
        """Count `amount` more units done (thread-safe)."""
        with self._lock:
            self.done += amount
            self._show()

    def update(self, done: int, total: int | None = None) -> None:
        """Set how many units are done (and, when it becomes known, how many there are)."""
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
            self._show()

    def _text(self) -> str:
        elapsed = time.monotonic() - self._started
        if self.total:
            share = min(1.0, self.done / self.total)
            return f"  ... {self.done}/{self.total} {self.unit} ({share:.0%}, {elapsed:.0f} s)"
        return f"  ... {self.done} {self.unit} ({elapsed:.0f} s)"

    def _show(self) -> None:
        if _quiet():
            return
        now = time.monotonic()
        if self._terminal:
            if now - self._last_shown >= 0.2 or (self.total is not None and self.done >= self.total):
                sys.stderr.write("\r" + self._text() + "\x1b[K")
                sys.stderr.flush()
                self._last_shown, self._drawn = now, True
            return
        quarter = int(4 * self.done / self.total) if self.total else 0
        if quarter > self._last_quarter or now - self._last_shown >= 15.0:
            self._last_quarter = max(quarter, self._last_quarter)
            self._last_shown = now
            print(self._text(), file=sys.stderr, flush=True)

    def finish(self) -> None:
        """End the redrawn line (if any) so the next message starts on a line of its own."""
        if self._drawn and not _quiet():
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._drawn = False


@contextlib.contextmanager
def building(what: str, path: Path | str, *, estimate: str, total: int | None = None,
             unit: str = "items") -> Iterator[BuildProgress]:
    """Announce a cache build on stderr, show its progress, then say how long it took.

    Args:
        what: What is built, as a user would name it ("the SQL database 'retail'").
        path: Where it goes (a file or folder in the cache).
        estimate: Roughly how long it takes here ("about 10 s", "1-3 minutes").
        total: How many units the build has, when known (else progress counts without a total).
        unit: What a unit is ("patients", "tasks").

    Yields:
        A `BuildProgress`: call `advance()` per unit done (or `update(done, total)`).

    Raises:
        NotBuilt: inside `no_builds()`, before anything is built.

    Set AGENTGYM_QUIET=1 to silence these messages.
    """
    if _refusals:
        raise NotBuilt(what, path)
    _say(f"agentgym: building {what} (first use only, {estimate}) -> {path}")
    progress = BuildProgress(what, total, unit)
    started = time.monotonic()
    try:
        yield progress
    except BaseException:
        progress.finish()
        _say(f"agentgym: building {what} stopped after {time.monotonic() - started:.1f} s")
        raise
    progress.finish()
    _say(f"agentgym: built {what} in {time.monotonic() - started:.1f} s")
