"""Perturbation wrappers: seeded, composable, reported in info, and still solvable."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from zoo import ZooEnv

import agentgym
from agentgym.wrappers import PERTURBATIONS, Perturb

agentgym.register(id="TestPerturbZoo-v0", entry_point=ZooEnv)


def test_gym_make_applies_perturbations_and_reports_them() -> None:
    env = gym.make("TestPerturbZoo-v0", perturb=["tool_rename", "tool_reorder"], perturb_seed=3)
    _, info = env.reset(seed=0)
    renamed = info["perturbations"]["renamed_tools"]
    assert set(renamed) == {"count_animals", "feed", "explode", "big_output"}
    names = [schema["function"]["name"] for schema in info["tools"]]
    assert sorted(names) == sorted([*renamed.values(), "submit"])
    assert info["perturbations"]["kinds"] == {"tool_rename": "action_space", "tool_reorder": "action_space"}
    assert env.step({"name": "count_animals", "arguments": {"kind": "lion"}})[0].startswith("Error: unknown tool")
    assert env.step({"name": renamed["count_animals"], "arguments": {"kind": "lion"}})[0] == "3"


def test_same_seed_same_perturbations_other_seed_differs() -> None:
    def renamed(seed: int) -> dict[str, str]:
        env = gym.make("TestPerturbZoo-v0", perturb="tool_rename", perturb_seed=seed)
        return env.reset(seed=0)[1]["perturbations"]["renamed_tools"]

    assert renamed(1) == renamed(1)
    assert any(renamed(1) != renamed(seed) for seed in range(2, 6))


def test_transient_errors_are_overcome_by_retrying() -> None:
    env = Perturb(ZooEnv(), ["transient_errors"], seed=0, rate=1.0)
    env.reset(options={"task_id": "zoo-0"})
    call = {"name": "count_animals", "arguments": {"kind": "lion"}}
    first = env.step(call)
    assert first[0] == "Error: the service is temporarily unavailable (503). Retry the same call."
    assert first[4]["perturbations"]["events"] == {"transient_errors": 1}
    assert env.step(call)[0] == "3"
    assert env.step({"name": "submit", "arguments": {"answer": 3}})[0].startswith("Error")  # fails once too
    assert env.step({"name": "submit", "arguments": {"answer": 3}})[1] == 1.0


def test_schema_variant_and_decoys_and_descriptions() -> None:
    env = Perturb(ZooEnv(), ["schema_variant", "tool_decoys", "misleading_descriptions"], seed=0)
    _, info = env.reset(options={"task_id": "zoo-0"})
    by_name = {schema["function"]["name"]: schema["function"] for schema in info["tools"]}
    assert list(by_name["feed"]["parameters"]["properties"]) == ["kind", "kilograms"]
    assert "count_animals_v1" in by_name and by_name["count_animals"]["description"] != \
        ZooEnv().tools["count_animals"].description
    assert env.step({"name": "count_animals_v1", "arguments": {"kind": "lion"}})[0] == \
        "Error: count_animals_v1 has been retired; call count_animals instead."


def test_typos_and_noise_change_text_but_not_the_task() -> None:
    env = Perturb(ZooEnv(), ["typos", "noise"], seed=0, rate=1.0)
    observation, info = env.reset(options={"task_id": "zoo-0"})
    assert observation != "How many lions are in the zoo?"
    assert info["messages"][1]["content"] == observation
    assert env.step({"name": "submit", "arguments": {"answer": 3}})[1] == 1.0


def test_unknown_kind_is_rejected_with_the_list() -> None:
    with pytest.raises(ValueError, match="choose from typos"):
        Perturb(ZooEnv(), ["earthquake"])
    assert set(PERTURBATIONS.values()) == {"observation", "action_space", "metadata", "transition"}


def test_perturbed_env_never_raises_on_garbage() -> None:
    env = Perturb(ZooEnv(), list(PERTURBATIONS), seed=5, rate=0.5)
    env.reset(seed=0)
    for action in ["", "{", {"name": 1}, [{"name": "x", "arguments": []}], "\ud800"]:
        observation: Any = env.step(action)[0]
        assert observation.startswith("Error")
