"""Where agentgym keeps data it builds once and reuses (databases, populations, task sets, indexes, images).

The cache holds graders' data (task answers, expected states, hidden tests, gold results), so its root is
private to the user who owns it (mode 0700): a sandbox process running under another uid cannot read it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


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
