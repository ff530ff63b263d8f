"""Errors the core gives a meaning to across domains.

`InfrastructureError` is how a domain (or the sandbox) says "this episode's outcome is not the agent's doing":
the sandbox died under the grader, a database connection was lost, a container could not start. `ToolEnv` ends
such an episode with reward 0, the `infra_error` diagnosis and `info["infra_error"] = True`, so evaluation
and training can count it apart from an ordinary failure (docs/diagnosis.md). Anything else a grader raises is
a `grader_error`: reward 0 too, but not flagged as infrastructure, because the agent may have caused it.
"""

from __future__ import annotations


class InfrastructureError(RuntimeError):
    """The environment's own machinery failed, not because of anything the agent did.

    Raise it (or a subclass) from a verifier, a tool or the sandbox only when the cause is outside the agent's
    reach: a backend that went away, a connection lost, a timeout of the host itself. A failure the agent could
    have provoked (a file it deleted, a process it killed, output it garbled) is not infrastructure: raise an
    ordinary exception, or return a score of 0.
    """
