"""SQL-v0: text-to-SQL over generated and imported databases, scored by executing queries.

Layout: `data/` makes and loads the databases (generators, SQLite/DuckDB/PostgreSQL loaders, read-only engines),
`tools.py` holds what the agent may call, `tasks/` the task families (one file each), `verify.py` the
execution-accuracy verifier, `env.py` the env class and its registration, `importers.py` Spider and BIRD.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"

# agentgym first: its import loads every plugin, this one included, and a submodule imported before it (say
# `agentgym_sql.verify` on its own) would otherwise be half-initialised when the plugin loader reaches it.
import agentgym  # noqa: F401
