"""The TRL adapter on a served env: `environment_factory("SQL-v0", remote=URL)` episodes score exactly as the local
env's, the dataset is checked against the server, and a training step runs with its episodes on the server.

The server is a real `agentgym serve` app on a loopback port (tests/serve/conftest.py), in a thread of this process.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import torch

import agentgym

for _module in ("openenv", "uvicorn", "websockets"):
    pytest.importorskip(_module, reason="the serve extra is not installed (pip install -e '.[serve]')")

from agentgym_baselines.adapter import ToolCallFailed, check_remote_tasks, environment_factory, task_dataset
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.training import RunSettings, build_trainer
from forcing import force_generations, replay_or_wrong

from tests.serve.conftest import serving

ENV = "SQL-v0"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    if ENV not in {record.id for record in agentgym.registered()}:
        if os.environ.get("CI"):  # make install puts every distribution in; missing is a failure
            pytest.fail("CI installs every distribution, but SQL-v0 is missing: run make install")
        pytest.skip("SQL-v0 is not installed (pip install -e domains/sql)")
    with serving(ENV, max_sessions=32, idle_timeout=120) as url:
        yield url.replace("http://", "ws://")


def _play(environment: Any, task: Any, actions: list[dict[str, Any]]) -> list[Any]:
    """Reset to `task` and make each call through the adapter's tool methods (as TRL does); the results."""
    environment.reset(task_id=task.id, prompt=[])
    seen: list[Any] = []
    for action in actions:
        try:
            seen.append(getattr(environment, action["name"])(**action["arguments"]))
        except ToolCallFailed as error:
            seen.append(("error", str(error)))
    return [*seen, environment.get_reward(), environment._step_labels(), environment._episode_stats()]


def test_remote_episodes_score_as_the_local_ones(server: str) -> None:
    local_class, remote_class = environment_factory(ENV), environment_factory(ENV, remote=server)
    assert remote_class is not local_class and remote_class._remote == server
    assert pickle.loads(pickle.dumps(remote_class)) is remote_class  # rebuilt from env id and URL (TRL workers)
    assert [name for name in vars(remote_class) if not name.startswith("_")] == \
        [name for name in vars(local_class) if not name.startswith("_")]  # the same tool methods
    local, remote = local_class(), remote_class()
    tasks = list(gym.make(ENV).unwrapped.task_set.filter(split="train"))[:4]
    rewards = []
    for index, task in enumerate(tasks):  # the solution (with a bad call first), or a wrong answer
        final = task.solution[-1]
        wrong = [{"name": final["name"], "arguments": {key: "SELECT 1" for key in final["arguments"]}}]
        actions = [{"name": "describe_table", "arguments": {"table": "no_such_table"}},
                   *(task.solution if index % 2 == 0 else wrong)]
        expected = _play(local, task, actions)
        assert _play(remote, task, actions) == expected
        rewards.append(expected[-3])
    assert rewards[0] == 1.0 and rewards[1] == 0.0  # both outcomes were compared
    assert _play(local, tasks[0], actions[:1])[-2] == _play(remote, tasks[0], actions[:1])[-2]  # unfinished, too


def test_dataset_is_checked_against_the_server(server: str) -> None:
    rows = task_dataset(ENV, split="train", remote=server).to_list()
    assert rows == task_dataset(ENV, split="train").to_list()
    with pytest.raises(ValueError, match="runs SQL-v0 with no --env-arg, but the env arguments given here are"):
        task_dataset(ENV, split="train", remote=server, seed=7)  # not the arguments the server runs with
    other = gym.make(ENV, seed=7).unwrapped  # other tasks than the server's, whatever the arguments say
    with pytest.raises(ValueError, match="other SQL-v0 tasks than the local env|another prompt"):
        check_remote_tasks(ENV, server, None, other)
    check_remote_tasks(ENV, server, None, gym.make(ENV).unwrapped)  # the same tasks pass
    with pytest.raises(ValueError, match="runs SQL-v0 with no --env-arg"):
        environment_factory(ENV, remote=server, max_turns=3)  # not the arguments the server runs with


def test_a_training_step_runs_its_episodes_on_the_server(server: str, tmp_path: Path) -> None:
    tasks = {task.prompt: task for task in gym.make(ENV).unwrapped.task_set}
    model, tokenizer = build_tiny_model(5)

    def choose(row: int, prompt: str) -> str:
        task = tasks[prompt.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]]
        turns = prompt.split("<|im_start|>assistant")[1:-1]
        return replay_or_wrong(task, turns, solve=row == 0)

    force_generations(model, tokenizer, choose)
    config = {"max_steps": 1, "num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 256,
              "learning_rate": 1e-2, "save_strategy": "no"}
    settings = RunSettings(method="grpo", env_id=ENV, model="tiny:random", output_dir=str(tmp_path / "remote"),
                           config=config, remote=server)
    trainer = build_trainer(settings, model, tokenizer)
    before = {name: value.detach().clone() for name, value in model.named_parameters()}
    trainer.train()
    environments = list(trainer.environments or [])
    assert environments and all(environment._tool_env is None for environment in environments)  # none ran here
    log = trainer.state.log_history[0]
    assert log["reward"] == pytest.approx(0.25) and log["episodes/submitted"] == 1.0  # as the local run's
    assert any(not torch.equal(before[name], value) for name, value in model.named_parameters())


def test_a_mix_can_run_one_env_here_and_one_on_the_server(server: str, tmp_path: Path) -> None:
    import toy_env

    model, tokenizer = build_tiny_model(0)
    settings = RunSettings(method="grpo", env_id=f"{toy_env.ENV_ID},{ENV}", model="tiny:random",
                           output_dir=str(tmp_path / "mix"), remote=f"-,{server}",
                           config={"max_steps": 1, "num_generations": 2, "per_device_train_batch_size": 4,
                                   "max_completion_length": 64, "save_strategy": "no"})
    trainer = build_trainer(settings, model, tokenizer)
    factories = trainer.environment_factories
    assert factories[toy_env.ENV_ID]._remote is None and factories[ENV]._remote == server
    assert {row["environment"] for row in trainer.train_dataset} == {toy_env.ENV_ID, ENV}


def test_an_instance_left_idle_past_the_servers_timeout_starts_a_new_session() -> None:
    with serving(ENV, max_sessions=4, idle_timeout=0.5) as url:
        environment = environment_factory(ENV, remote=url)()
        task = next(iter(gym.make(ENV).unwrapped.task_set.filter(split="train")))
        assert _play(environment, task, task.solution)[-3] == 1.0
        time.sleep(1.5)  # the server closes the idle session (its reaper runs every timeout / 4)
        assert _play(environment, task, task.solution)[-3] == 1.0  # a new session on the same server
