"""`gymnasium.make_vec` on agentgym envs: sync and async (shared memory on and off) give the same episodes."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)

LIST_TABLES = '{"name": "list_tables", "arguments": {}}'


def _play(mode: str, **vector_kwargs: Any) -> list[Any]:
    envs = gym.make_vec("SQL-v0", num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs)
    try:
        observations, _ = envs.reset(seed=3)
        stepped, rewards, terminated, truncated, _ = envs.step([LIST_TABLES, "not a tool call"])
        return [tuple(observations), tuple(stepped), rewards.tolist(), terminated.tolist(), truncated.tolist()]
    finally:
        envs.close()


@pytest.mark.parametrize("vector_kwargs", [{}, {"shared_memory": False}], ids=["shared-memory", "pipes"])
def test_async_vector_env_equals_sync(vector_kwargs: dict[str, Any]) -> None:
    sync = _play("sync")
    assert sync[0][0].startswith("Database:") and sync[1][0].startswith("Tables in database")
    assert sync[1][1].startswith("Error")
    assert _play("async", **vector_kwargs) == sync


def test_unicode_survives_shared_memory() -> None:
    from multiprocessing import Array

    from gymnasium.vector.utils import read_from_shared_memory, write_to_shared_memory

    from agentgym.spaces import SHARED_TEXT_BYTES, UnicodeText

    space = UnicodeText()
    memory = Array("B", 2 * SHARED_TEXT_BYTES)
    view = read_from_shared_memory(space, memory, n=2)
    write_to_shared_memory(space, 1, "日本語 \ud800 🙂", memory)
    write_to_shared_memory(space, 0, "", memory)
    assert tuple(view) == ("", "日本語 \ud800 🙂")
    with pytest.raises(ValueError, match="shared_memory"):
        write_to_shared_memory(space, 0, "x" * SHARED_TEXT_BYTES, memory)
