"""CLI-v0: shell tasks on generated file trees, run in a sandbox and scored by code.

Layout: `data/` makes the file-tree fixtures (deterministic, packed as tar), `tools.py` holds what the agent may
call (`run_shell`, `read_file`, `write_file`, `list_dir`, `submit`), `tasks/` the task families (one file each),
`verify.py` the verifier (answer, file-system state, hidden tests), `env.py` the env class, `importers.py`
InterCode-Bash and Terminal-Bench. `runtime.py` adapts `agentgym.sandbox` to what the env needs.

This module stays light: `register` only names entry points; everything heavy is imported at `gym.make`.
"""

__all__ = ["__version__", "register"]
__version__ = "0.1.0"


def register() -> None:
    """Register `CLI-v0` with agentgym (called through the `agentgym.envs` entry point)."""
    import agentgym

    agentgym.register(
        id="CLI-v0",
        entry_point="agentgym_cli.env:make_env",
        generator="agentgym_cli.tasks:generate",
        description="Shell tasks on generated file trees: answers, file-system state, hidden tests",
    )
