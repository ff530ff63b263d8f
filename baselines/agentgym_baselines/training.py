"""Building and running a GRPO or TT-OPD run from plain settings (what `agentgym train` calls).

`run_training(RunSettings(...))` loads the model (`tiny:random` or a path / hub id already on disk), builds the
task dataset and the environment class, picks the device settings (CUDA and bf16 when present, TRL's vLLM
generation when vLLM is installed and a GPU is there), trains, writes `metrics.jsonl` (every logged step) and the
final model to the output folder, and returns a summary.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig

from agentgym_baselines.adapter import environment_factory, task_dataset
from agentgym_baselines.grpo import AgentGRPOTrainer, device_settings
from agentgym_baselines.tiny import TINY_MODEL_SPEC, build_tiny_model
from agentgym_baselines.ttopd import TTOPDConfig, TTOPDTrainer

METRICS_FILE = "metrics.jsonl"


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
    """`(model, tokenizer)` for `tiny:random` or a local path / cached hub id (nothing is downloaded here)."""
    if spec == TINY_MODEL_SPEC:
        return build_tiny_model(seed)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec)
        model = AutoModelForCausalLM.from_pretrained(spec, dtype=dtype)
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
    config_class = TTOPDConfig if settings.method == "ttopd" else GRPOConfig
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
        "max_completion_length": 512,
        "max_tool_calling_iterations": 10,
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


def build_trainer(settings: RunSettings, model: Any = None, tokenizer: Any = None) -> AgentGRPOTrainer:
    """The trainer for `settings` (a `TTOPDTrainer` for method "ttopd"). Pass `model`/`tokenizer` to skip loading."""
    if settings.method not in ("grpo", "ttopd"):
        raise ValueError(f"method must be 'grpo' or 'ttopd', got {settings.method!r}")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if model is None or tokenizer is None:
        model, tokenizer = load_model(settings.model, settings.seed)
    config = make_config(settings)
    dataset = task_dataset(settings.env_id, split=settings.split, codeact=settings.codeact, **settings.env_kwargs)
    factory = environment_factory(settings.env_id, codeact=settings.codeact, **settings.env_kwargs)
    trainer_class = TTOPDTrainer if settings.method == "ttopd" else AgentGRPOTrainer
    trainer = trainer_class(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                            environment_factory=factory, codeact=settings.codeact)
    trainer.add_callback(MetricsFile(Path(settings.output_dir) / METRICS_FILE))
    return trainer


def run_training(settings: RunSettings) -> dict[str, Any]:
    """Train, save the final model and tokenizer to the output folder, and return a summary."""
    checkpoint: str | None = None
    if settings.resume:
        checkpoint = get_last_checkpoint(settings.output_dir) if os.path.isdir(settings.output_dir) else None
        if checkpoint is None:
            raise FileNotFoundError(f"--resume: no checkpoint-* folder in {settings.output_dir}; run without "
                                    f"--resume to start, or point --output at the earlier run")
    trainer = build_trainer(settings)
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
    }
    if isinstance(trainer, TTOPDTrainer):
        summary["teacher_updates"] = len(trainer.teacher_updates)
    return summary
