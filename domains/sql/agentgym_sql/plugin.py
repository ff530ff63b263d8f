"""Registers SQL-v0 with agentgym (entry point ``agentgym.envs: sql``). Light on purpose: the engines, sqlglot,
tools and tasks are imported only when the env is made, so `import agentgym` does not pay for them."""

from __future__ import annotations


def register() -> None:
    """Register SQL-v0 and its task generator."""
    import agentgym

    agentgym.register(
        id="SQL-v0",
        entry_point="agentgym_sql.env:make_env",
        generator="agentgym_sql.tasks:generate",
        description="Text-to-SQL over SQLite/DuckDB/PostgreSQL; execution-accuracy rewards",
    )
