"""Sandboxed execution for agents: a persistent shell and Python namespace in a hardened container (or, where no
Docker daemon runs, a local subprocess with weaker isolation), and a warm pool of them.

    from agentgym.sandbox import Sandbox
    with Sandbox.create() as sandbox:
        sandbox.run("ls -la")
        sandbox.run_python("x = 1")
        sandbox.run_python("print(x)")

See docs/sandbox.md.
"""

from agentgym.sandbox.base import ExecResult, Sandbox, SandboxError, close_all, make_tar
from agentgym.sandbox.pool import PoolStats, SandboxPool, close_pools, get_pool, pool_stats

__all__ = [
    "ExecResult", "PoolStats", "Sandbox", "SandboxError", "SandboxPool", "close_all", "close_pools", "get_pool",
    "make_tar", "pool_stats",
]
