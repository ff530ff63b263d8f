"""Where agentgym keeps data it builds once and reuses (databases, populations, task sets, indexes, images)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """`$AGENTGYM_CACHE/PARTS` (default `$XDG_CACHE_HOME/agentgym`, else `~/.cache/agentgym`), created."""
    root = os.environ.get("AGENTGYM_CACHE")
    if root:
        base = Path(root).expanduser()
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "agentgym"
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
