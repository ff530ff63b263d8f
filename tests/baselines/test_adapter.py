"""The TRL adapter: tool methods TRL can describe, episodes, rewards, pickling, the dataset, CodeAct."""

from __future__ import annotations

import os
import pickle
from typing import Any

import gymnasium as gym
import pytest
import toy_env
from agentgym_baselines.adapter import (
    EpisodeOver,
    ToolCallFailed,
    environment_factory,
    flat_schema,
    task_dataset,
)
from agentgym_baselines.codeact import enable_codeact_parsing
from agentgym_baselines.tiny import build_tiny_tokenizer
from transformers.utils import get_json_schema

import agentgym

ENV = toy_env.ENV_ID


def _types(schema: dict[str, Any]) -> set[str]:
    """JSON types a property schema allows, 'null' left out (pydantic writes anyOf, transformers nullable)."""
    found: set[str] = set()
    kinds = schema.get("type")
    found.update([kinds] if isinstance(kinds, str) else kinds or [])
    for option in schema.get("anyOf", []):
        found |= _types(option)
    return found - {"null"}


# The domain envs that start without services (CLI-v0 needs Docker and is checked by its own tests).
DOMAIN_ENVS = ["SQL-v0", "FHIR-v0"]


@pytest.mark.parametrize("env_id", [ENV, *DOMAIN_ENVS])
def test_adapter_tool_schemas_match_the_env(env_id: str) -> None:
    if env_id not in {record.id for record in agentgym.registered()}:
        if os.environ.get("CI"):  # make install puts every distribution in; missing is a failure
            pytest.fail("CI installs every distribution, but an env is missing: run make install")
        pytest.skip(f"{env_id} is not installed (pip install -e domains/...)")
    cls = environment_factory(env_id)
    instance = cls()
    env = gym.make(env_id).unwrapped
    public = sorted(name for name in dir(cls) if not name.startswith("_") and name not in ("reset", "get_reward"))
    assert public == sorted(env.tools)
    for name, item in env.tools.items():
        expected = flat_schema(item)
        got = get_json_schema(getattr(instance, name))["function"]
        assert got["name"] == expected["name"]
        assert got["description"] == expected["description"]
        assert set(got["parameters"]["properties"]) == set(expected["parameters"]["properties"])
        assert set(got["parameters"].get("required", [])) == set(expected["parameters"]["required"])
        for parameter, schema in expected["parameters"]["properties"].items():
            mine = got["parameters"]["properties"][parameter]
            assert _types(mine) == _types(schema), (name, parameter)
            assert mine.get("enum") == schema.get("enum"), (name, parameter)
            if schema.get("description"):
                assert mine["description"] == schema["description"], (name, parameter)


def test_pydantic_parameters_are_flattened_and_rebuilt() -> None:
    instance = environment_factory(ENV)()
    schema = get_json_schema(instance.note)["function"]["parameters"]
    assert set(schema["properties"]) == {"subject", "priority", "tags"}
    assert schema["required"] == ["subject"]
    instance.reset(task_id="copy-apple-train")
    assert instance.note(subject="groceries", priority=3) == "noted groceries (priority 3, tags [])"


def test_episode_reward_and_errors() -> None:
    instance = environment_factory(ENV)()
    instance.reset(task_id="copy-river-train", prompt=[], other_column=1)
    assert instance.get_reward() == 0.0
    assert instance.lookup(key="river") == "river -> RIVER"
    with pytest.raises(ToolCallFailed, match="no key 'nile'; keys are: apple"):
        instance.lookup(key="nile")
    with pytest.raises(ToolCallFailed, match="missing required argument 'key'"):
        instance.lookup()
    assert instance.get_reward() == 0.0
    instance.submit(answer="river")
    assert instance.get_reward() == 1.0
    with pytest.raises(EpisodeOver):
        instance.lookup(key="river")
    instance.reset(task_id="copy-river-train")
    assert instance.get_reward() == 0.0
    instance.submit(answer="stone")
    assert instance.get_reward() == 0.0
    stats = instance._episode_stats()
    assert stats["submitted"] is True and stats["calls"] == {"submit": 1}


def test_reset_without_task_id_says_how_to_fix() -> None:
    with pytest.raises(KeyError, match="task_dataset"):
        environment_factory(ENV)().reset(prompt=[])


def test_class_and_instances_pickle() -> None:
    cls = environment_factory(ENV, max_turns=3)
    assert pickle.loads(pickle.dumps(cls)) is cls
    instance = cls()
    instance.reset(task_id="copy-apple-train")
    copy = pickle.loads(pickle.dumps(instance))
    assert type(copy) is cls
    copy.reset(task_id="copy-stone-train")
    copy.submit(answer="stone")
    assert copy.get_reward() == 1.0


def test_task_dataset_has_prompts_and_ids_but_no_answers() -> None:
    dataset = task_dataset(ENV, split="test")
    assert dataset.column_names == ["prompt", "task_id", "seed"]
    assert len(dataset) == len(toy_env.WORDS)
    assert all(task_id.endswith("-test") for task_id in dataset["task_id"])
    row = dataset[0]
    assert [message["role"] for message in row["prompt"]] == ["system", "user"]
    # The task message is the env's own prompt of the episode, which the adapter's reset returns (TRL appends it).
    assert row["prompt"][1]["content"] == ""
    assert environment_factory(ENV)().reset(**row) == "Submit the word apple."
    assert "apple" not in row["prompt"][0]["content"]


def test_reset_refuses_a_row_whose_prompt_the_env_would_not_grade() -> None:
    instance = environment_factory(ENV)()
    row = task_dataset(ENV, split="test")[0]
    row["prompt"][1]["content"] = "Submit the word apple."  # exactly the env's prompt: nothing is appended
    assert instance.reset(**row) is None
    row["prompt"][1]["content"] = "Submit the word river."
    with pytest.raises(ValueError, match="differs from the one BaselinesToy-v0 gives"):
        instance.reset(**row)


def test_codeact_runs_blocks_with_the_tools_as_functions() -> None:
    cls = environment_factory(ENV, codeact=True, allow_weak_isolation=True, code_timeout=3)
    public = sorted(name for name in dir(cls) if not name.startswith("_"))
    assert public == ["execute_code", "get_reward", "reset"]
    system = task_dataset(ENV, codeact=True)[0]["prompt"][0]["content"]
    assert "```python" in system and "lookup(key: str" in system
    instance = cls()
    instance.reset(task_id="copy-cloud-train")
    output = instance.execute_code(code="from tools import lookup\nvalue = lookup('cloud')\nprint(value)")
    assert output == "cloud -> CLOUD"
    with pytest.raises(ToolCallFailed, match="printed\nError: no key 'x'"):
        instance.execute_code(code="print('printed')\nlookup('x')")
    # The block runs in a sandbox, so the standard library is there (it reaches the sandbox, not the trainer);
    # a runaway loop is stopped by the time limit and a syntax error is an observation.
    assert instance.execute_code(code="import os\nprint(os.path.isdir(os.getcwd()))") == "True"
    for code, message in [("while True:\n    pass", "ran past 3 s"), ("def (", "SyntaxError"),
                          ("lookup('a', 'b', 'c')", "at most 2 positional")]:
        with pytest.raises(ToolCallFailed, match=message):
            instance.execute_code(code=code)
    instance.execute_code(code="import json\nsubmit(json.loads('\"cloud\"'))")
    assert instance.get_reward() == 1.0
    with pytest.raises(EpisodeOver):
        instance.execute_code(code="print(1)")
    instance._code_runner.close()


def test_codeact_parsing_reads_python_blocks_as_execute_code_calls() -> None:
    from trl.chat_template_utils import add_response_schema, parse_response

    tokenizer = enable_codeact_parsing(add_response_schema(build_tiny_tokenizer(0)))
    prefix = tokenizer.apply_chat_template([{"role": "user", "content": "Submit the word apple."}],
                                           add_generation_prompt=True, tokenize=True, return_dict=False)
    text = "Let me look.\n```python\nprint(lookup('apple'))\n```<|im_end|>"
    parsed = parse_response(tokenizer, tokenizer(text)["input_ids"], prefix=prefix)
    assert parsed["tool_calls"] == [{"type": "function", "function": {
        "name": "execute_code", "arguments": {"code": "print(lookup('apple'))\n"}}}]
    tagged = '<tool_call>\n{"name": "submit", "arguments": {"answer": "x"}}\n</tool_call><|im_end|>'
    parsed = parse_response(tokenizer, tokenizer(tagged)["input_ids"], prefix=prefix)
    assert parsed["tool_calls"][0]["function"]["name"] == "submit"
