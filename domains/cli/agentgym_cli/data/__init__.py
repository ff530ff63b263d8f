"""File-tree fixtures: generated workspaces (`fixtures.py`) packed as reproducible tar archives."""

from agentgym_cli.data.fixtures import Entry, Fixture, build_workspace, fixture_from_tar, get_workspace

__all__ = ["Entry", "Fixture", "build_workspace", "fixture_from_tar", "get_workspace"]
