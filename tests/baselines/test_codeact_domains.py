"""The oracle solves a sample of every domain in CodeAct mode, through the path a model's code takes.

Each task's solution becomes one ```python block of stub calls; the block is parsed by the tokenizer's CodeAct
reader (as TRL would), runs in the sandbox, and its tool calls reach the env as data. The score must be 1.0.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest
from agentgym_baselines.adapter import environment_factory, task_dataset
from agentgym_baselines.codeact import enable_codeact_parsing
from agentgym_baselines.tiny import build_tiny_tokenizer
from trl.chat_template_utils import add_response_schema, parse_response

import agentgym

DOMAINS = [record.id for record in agentgym.registry.installed()]  # every installed env, plugins included


def _block(cls: Any, solution: list[dict[str, Any]]) -> str:
    lines = ["import json"]
    for step in solution:
        arguments = cls._signatures[step["name"]].flatten(step.get("arguments") or {})
        lines.append(f"print({step['name']}(**json.loads({json.dumps(arguments)!r})))")
    return "```python\n" + "\n".join(lines) + "\n```"


@pytest.mark.parametrize("env_id", DOMAINS)
def test_oracle_solves_a_sample_in_codeact_mode(env_id: str) -> None:
    cls = environment_factory(env_id, codeact=True, allow_weak_isolation=True)
    system = task_dataset(env_id, codeact=True, limit=1)[0]["prompt"][0]["content"]
    tasks = list(gym.make(env_id).unwrapped.task_set)
    families: dict[str, Any] = {}
    for task in tasks:
        families.setdefault(task.family, task)
    sample = list(families.values())[:3]
    tokenizer = enable_codeact_parsing(add_response_schema(build_tiny_tokenizer(0)))
    prefix = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True,
                                           tokenize=True, return_dict=False)
    instance = cls()
    try:
        for task in sample:
            for step in task.solution:
                assert f"{step['name']}(" in system  # the prompt names every function the solution uses
            parsed = parse_response(tokenizer, tokenizer(_block(cls, task.solution) + "<|im_end|>")["input_ids"],
                                    prefix=prefix)
            (call,) = parsed["tool_calls"]
            instance.reset(task_id=task.id)
            output = getattr(instance, call["function"]["name"])(**call["function"]["arguments"])
            assert instance.get_reward() == 1.0, (task.id, output[-500:])
    finally:
        instance._code_runner.close()
