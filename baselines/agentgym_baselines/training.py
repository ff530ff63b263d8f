"""Building and running a GRPO or TT-OPD run from plain settings (what `agentgym train` calls).

`run_training(RunSettings(...))` loads the model (`tiny:random` or a path / hub id already on disk), builds the
task dataset and the environment class, picks the device settings (CUDA and bf16 mixed precision when present,
TRL's vLLM generation when vLLM is installed and a GPU is there), trains, writes `metrics.jsonl` (every logged
step) and the final model to the output folder, and returns a summary.

Before training, the settings are fitted to the env (`fit_to_env`):
- an env with a sandbox pool (`pool_size`, CLI-v0) gets one sandbox per rollout of a generation batch, since TRL
  starts every rollout of a batch before it generates;
- `max_tool_calling_iterations` is the env's `max_turns` unless set;
- the completion budget (`max_completion_length`, tokens of the whole episode) is checked against the largest tool
  result the env can return. TRL drops a tool result that would overflow the budget and ends the rollout there,
  silently, so when the user set neither, the env's `output_limit` is lowered to fit half the budget (the model
  sees a result that says it was cut); when the user set one, a warning names the flag to change. The
  `episodes/cut_by_budget` metric counts rollouts that were ended this way.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig

from agentgym_baselines.adapter import environment_factory, task_dataset
from agentgym_baselines.grpo import AgentGRPOConfig, AgentGRPOTrainer, device_settings
from agentgym_baselines.mixing import environment_factories, mixed_task_dataset, parse_env_ids, parse_remotes
from agentgym_baselines.task_stream import (
    CurriculumCheckpoints,
    CurriculumDataset,
    curriculum_options,
    fit_config_to_curriculum,
    restore_curriculum,
)
from agentgym_baselines.tiny import TINY_MODEL_SPEC, build_tiny_model
from agentgym_baselines.ttopd import TTOPDConfig, TTOPDTrainer

from agentgym.env import ToolEnv

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"
DEFAULT_MAX_COMPLETION_LENGTH = 512
TOOL_RESULT_SHARE = 0.5  # of the completion budget one tool result may fill when the output cap is chosen for it


@dataclass
class RunSettings:
    """Everything `agentgym train` needs. `config` holds GRPOConfig / TTOPDConfig fields to override."""

    method: str  # "grpo" or "ttopd"
    env_id: str
    model: str
    output_dir: str
    codeact: bool = False
    split: str | None = "train"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    resume: bool = False
    use_vllm: bool | None = None  # None: when vLLM is installed and CUDA is present
    allow_weak_isolation: bool = False  # CodeAct: let "auto" run blocks in the local sandbox without Docker
    code_sandbox: str = "auto"  # CodeAct: sandbox backend of the blocks
    mix: list[float] | None = None  # shares of the envs when env_id lists several ("SQL-v0,FHIR-v0"); None: equal
    remote: str | None = None  # agentgym serve URL(s), one per env of env_id ("-": that env runs here)
    curriculum: str | None = None  # an agentgym.curriculum sampler name; None: TRL's shuffled passes over the tasks
    curriculum_options: dict[str, Any] = field(default_factory=dict)  # make_sampler options (window=, ...)


class MetricsFile(TrainerCallback):
    """Appends every logged metrics dict, with its step, to `OUTPUT/metrics.jsonl` (restarted by a new run,
    continued by a resumed one)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       **kwargs: Any) -> None:
        if state.global_step == 0 and state.is_world_process_zero:
            self.path.unlink(missing_ok=True)  # a new run (not a resume) starts a new file

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if logs is None or not state.is_world_process_zero:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": state.global_step, **logs}, default=float) + "\n")


def load_model(spec: str, seed: int = 0) -> tuple[Any, Any]:
    """`(model, tokenizer)` for `tiny:random` or a local path / cached hub id (nothing is downloaded here).

    The weights are loaded in float32 whatever the checkpoint's dtype: they are the optimizer's master weights;
    on CUDA the trainer computes in bf16 under autocast (`bf16=True`), so small updates are not rounded away.
    """
    if spec == TINY_MODEL_SPEC:
        return build_tiny_model(seed)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(spec)
        model = AutoModelForCausalLM.from_pretrained(spec, dtype=torch.float32)
    except OSError as error:
        raise FileNotFoundError(f"cannot load model {spec!r} ({error}); pass a folder with a saved model and "
                                f"tokenizer, or --model {TINY_MODEL_SPEC} for a smoke run") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return model, tokenizer


def vllm_available() -> bool:
    return torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None


def make_config(settings: RunSettings) -> GRPOConfig:
    """The trainer config: our defaults, then the machine's device settings, then the user's overrides."""
    config_class = TTOPDConfig if settings.method == "ttopd" else AgentGRPOConfig
    known = {item.name for item in dataclasses.fields(config_class)}
    unknown = sorted(set(settings.config) - known)
    if unknown:
        raise ValueError(f"unknown {config_class.__name__} field(s): {', '.join(unknown)} "
                         f"(see `agentgym train {settings.method} --help` and TRL's GRPOConfig)")
    values: dict[str, Any] = {
        "output_dir": settings.output_dir,
        "logging_steps": 1,
        "save_steps": 100,
        "save_total_limit": 3,
        "report_to": "none",
        "seed": settings.seed,
        "num_generations": 8,
        "per_device_train_batch_size": 8,
        "max_completion_length": DEFAULT_MAX_COMPLETION_LENGTH,
        "log_completions": False,
    }
    values.update(device_settings())
    if settings.model == TINY_MODEL_SPEC:
        values.update({"gradient_checkpointing": False, "learning_rate": 1e-3})
    use_vllm = vllm_available() if settings.use_vllm is None else settings.use_vllm
    if use_vllm:
        if not vllm_available():
            raise RuntimeError("--vllm needs CUDA and the vllm package (pip install vllm)")
        values.update({"use_vllm": True, "vllm_mode": "colocate"})
    values.update(settings.config)
    return config_class(**values)


def _tool_result_limit(env: ToolEnv, codeact: bool) -> tuple[int, str]:
    """(most characters one tool result can have, the tool that returns it) under the env's caps."""
    if codeact:
        return env.output_limit, "execute_code"
    limits = {name: min(getattr(item, "output_limit", env.output_limit), env.output_limit)
              for name, item in env.tools.items()}
    name = max(limits, key=lambda key: limits[key])
    return limits[name], name


def _chars_per_token(tokenizer: Any, env: ToolEnv) -> float:
    """How many characters of this env's text one token of `tokenizer` holds (from its prompt and tools)."""
    sample = env.system_prompt + "\n" + "\n".join(f"{item.name}: {item.description}" for item in env.tools.values())
    tokens = len(tokenizer(sample, add_special_tokens=False)["input_ids"]) or 1
    return max(len(sample) / tokens, 1.0)


def fit_to_env(settings: RunSettings, config: GRPOConfig, tokenizer: Any) -> list[str]:
    """Fit the env kwargs and `config` to the env (see the module docstring); returns the notes it made.

    Changes `settings.env_kwargs` and `config` in place.
    """
    notes: list[str] = []
    probe = gym.make(settings.env_id, **settings.env_kwargs)
    try:
        env = probe.unwrapped
        if not isinstance(env, ToolEnv):
            raise TypeError(f"{settings.env_id} is not an agentgym ToolEnv (got {type(env).__name__})")
        rollouts = int(getattr(config, "generation_batch_size", None) or config.per_device_train_batch_size)
        if hasattr(env, "pool_size") and "pool_size" not in settings.env_kwargs and env.pool_size < rollouts:
            settings.env_kwargs["pool_size"] = rollouts
            notes.append(f"pool_size={rollouts}: one sandbox per rollout of a generation batch")
        if "max_tool_calling_iterations" not in settings.config and not getattr(config, "distill_only", False):
            config.max_tool_calling_iterations = env.max_turns
        budget = int(config.max_completion_length)
        chars, tool_name = _tool_result_limit(env, settings.codeact)
        ratio = _chars_per_token(tokenizer, env)
        needed = math.ceil(chars / ratio)
        if needed >= budget:
            fitted = int(budget * TOOL_RESULT_SHARE * ratio)
            user_budget = "max_completion_length" in settings.config
            user_cap = "output_limit" in settings.env_kwargs
            if not user_budget and not user_cap:
                settings.env_kwargs["output_limit"] = fitted
                notes.append(f"output_limit={fitted}: tool results are cut to fit half of the {budget}-token "
                             f"completion budget (a full {tool_name} result, up to {chars} characters, is about "
                             f"{needed} tokens); raise --max-completion-length or pass --env-arg output_limit=N")
            else:
                message = (f"{settings.env_id}: one {tool_name} result can be {chars} characters (about {needed} "
                           f"tokens), but the whole episode's completion budget is {budget} tokens; TRL drops a "
                           f"tool result that does not fit and ends the rollout. Raise --max-completion-length "
                           f"(above {needed * 2}) or lower the cap with --env-arg output_limit={fitted}")
                warnings.warn(message, stacklevel=2)
                notes.append(message)
    finally:
        probe.close()
    for note in notes:
        logger.warning("agentgym train: %s", note)
    return notes


def build_trainer(settings: RunSettings, model: Any = None, tokenizer: Any = None) -> AgentGRPOTrainer:
    """The trainer for `settings` (a `TTOPDTrainer` for method "ttopd"). Pass `model`/`tokenizer` to skip loading."""
    if settings.method not in ("grpo", "ttopd"):
        raise ValueError(f"method must be 'grpo' or 'ttopd', got {settings.method!r}")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if model is None or tokenizer is None:
        model, tokenizer = load_model(settings.model, settings.seed)
    config = make_config(settings)
    settings.env_kwargs = dict(settings.env_kwargs)
    if settings.curriculum is not None and ("," in settings.env_id or settings.remote):
        raise ValueError("--curriculum works with one local env for now; drop --curriculum, or train on one env "
                         "without --remote")
    if "," in settings.env_id or settings.remote:
        dataset, factory, notes = _mixed_or_remote_data(settings, config, tokenizer)
    else:
        notes = fit_to_env(settings, config, tokenizer)
        curriculum: dict[str, Any] = {}
        if settings.curriculum is not None:
            curriculum = {"sampler": settings.curriculum, "sampler_options": curriculum_options(
                settings.curriculum, settings.curriculum_options, seed=settings.seed, group_size=config.num_generations)}
        dataset = task_dataset(settings.env_id, split=settings.split, codeact=settings.codeact,
                               episode_seeds=settings.seed, **curriculum,
                               **settings.env_kwargs)
        notes += fit_config_to_curriculum(config, dataset)
        factory = environment_factory(settings.env_id, codeact=settings.codeact, code_sandbox=settings.code_sandbox,
                                      allow_weak_isolation=settings.allow_weak_isolation, **settings.env_kwargs)
    trainer_class = TTOPDTrainer if settings.method == "ttopd" else AgentGRPOTrainer
    trainer = trainer_class(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                            environment_factory=factory, codeact=settings.codeact)
    trainer.add_callback(MetricsFile(Path(settings.output_dir) / METRICS_FILE))
    if isinstance(dataset, CurriculumDataset):
        trainer.add_callback(CurriculumCheckpoints(dataset.stream))
    trainer.fit_notes = notes
    return trainer


def _mixed_or_remote_data(settings: RunSettings, config: GRPOConfig, tokenizer: Any) -> tuple[Any, Any, list[str]]:
    """(dataset, environment factory, notes) for several envs (`env_id` "A,B"; TRL's multi-environment dict) or
    for envs served elsewhere (`remote`). Each env is fitted on its own; the tool-call limit is the largest; a
    fitted env argument of a served env cannot be applied here and becomes a note saying how to serve it."""
    env_ids = parse_env_ids(settings.env_id)
    remotes = parse_remotes(settings.remote, env_ids)
    notes: list[str] = []
    per_env: dict[str, dict[str, Any]] = {}
    iterations: list[int] = []
    for env_id in env_ids:
        one = dataclasses.replace(settings, env_id=env_id, env_kwargs=dict(settings.env_kwargs), remote=None)
        chosen = dict(one.env_kwargs)
        prefix = f"{env_id}: " if len(env_ids) > 1 else ""
        notes += [prefix + note for note in fit_to_env(one, config, tokenizer)]
        iterations.append(int(config.max_tool_calling_iterations or 0))
        if env_id in remotes:
            for key, value in one.env_kwargs.items():
                if chosen.get(key, object()) != value:
                    notes.append(f"{env_id} runs on {remotes[env_id]}, whose env arguments are the server's: serve "
                                 f"it with `agentgym serve {env_id} --env-arg {key}={value}` to apply the note above")
            one.env_kwargs = chosen
        per_env[env_id] = one.env_kwargs
    if "max_tool_calling_iterations" not in settings.config and not getattr(config, "distill_only", False):
        config.max_tool_calling_iterations = max(iterations)
    options: dict[str, Any] = {"codeact": settings.codeact, "code_sandbox": settings.code_sandbox,
                               "allow_weak_isolation": settings.allow_weak_isolation}
    if len(env_ids) == 1:
        env_id = env_ids[0]
        dataset = task_dataset(env_id, split=settings.split, codeact=settings.codeact, remote=remotes.get(env_id),
                               **per_env[env_id])
        return dataset, environment_factory(env_id, remote=remotes.get(env_id), **options, **per_env[env_id]), notes
    shares = settings.mix if settings.mix is not None else [1.0] * len(env_ids)
    dataset = mixed_task_dataset(env_ids, shares, split=settings.split, seed=settings.seed, codeact=settings.codeact,
                                 env_kwargs=per_env, remote=remotes)
    return dataset, environment_factories(env_ids, env_kwargs=per_env, remote=remotes, **options), notes


def run_training(settings: RunSettings, model: Any = None, tokenizer: Any = None) -> dict[str, Any]:
    """Train, save the final model and tokenizer to the output folder, and return a summary. Pass
    `model`/`tokenizer` to skip loading. A resumed run with a curriculum restores the curriculum's state too."""
    checkpoint: str | None = None
    if settings.resume:
        checkpoint = get_last_checkpoint(settings.output_dir) if os.path.isdir(settings.output_dir) else None
        if checkpoint is None:
            raise FileNotFoundError(f"--resume: no checkpoint-* folder in {settings.output_dir}; run without "
                                    f"--resume to start, or point --output at the earlier run")
    trainer = build_trainer(settings, model, tokenizer)
    if checkpoint is not None:
        restore_curriculum(trainer.train_dataset, checkpoint)
    started = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(settings.output_dir)
    if trainer.processing_class is not None:
        trainer.processing_class.save_pretrained(settings.output_dir)
    history = [entry for entry in trainer.state.log_history if "reward" in entry]
    summary: dict[str, Any] = {
        "method": settings.method,
        "env": settings.env_id,
        "output_dir": settings.output_dir,
        "steps": trainer.state.global_step,
        "resumed_from": checkpoint,
        "seconds": round(time.perf_counter() - started, 2),
        "train_loss": result.training_loss,
        "first_reward": history[0]["reward"] if history else None,
        "last_reward": history[-1]["reward"] if history else None,
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "vllm": bool(getattr(trainer.args, "use_vllm", False)),
        "cut_by_budget": [entry.get("episodes/cut_by_budget") for entry in history],
        "notes": getattr(trainer, "fit_notes", []),
    }
    if isinstance(trainer, TTOPDTrainer):
        summary["teacher_updates"] = len(trainer.teacher_updates)
    factories = getattr(trainer, "environment_factories", None) or {}
    if len(factories) > 1:  # several envs: their shares, and each env's last logged reward (NaN: not in that step)
        shares = settings.mix if settings.mix is not None else [1.0] * len(factories)
        summary["mix"] = {env_id: share / sum(shares) for env_id, share in zip(factories, shares, strict=True)}
        summary["last_reward_per_env"] = {
            env_id: next((entry[key] for entry in reversed(history)
                          if (key := f"rewards/{factory.__name__}/mean") in entry and entry[key] == entry[key]), None)
            for env_id, factory in factories.items()}
    if settings.remote:
        summary["remote"] = settings.remote
    if isinstance(trainer.train_dataset, CurriculumDataset):
        summary["curriculum"] = {"name": settings.curriculum, **trainer.train_dataset.stream.sampler.stats()}
    return summary
