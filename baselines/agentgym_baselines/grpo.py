"""`AgentGRPOTrainer`: TRL's `GRPOTrainer` on agentgym envs, with the episode metrics agents need.

Beyond TRL's own metrics (`reward`, `rewards/<EnvClass>/mean`, `completions/mean_length` counting the model's
tokens only, `tools/call_frequency`, `tools/failure_frequency`), each generation batch logs:
- `episodes/assistant_turns`: assistant turns per episode (runs of model tokens between tool results);
- `episodes/submitted`: fraction of episodes that called the terminal tool;
- `tools/<name>/calls`: calls of each tool per episode, and `tools/<name>/failures`: the fraction that failed.
In CodeAct mode (`codeact=True`) the tokenizer reads ```python blocks as `execute_code` calls.
"""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer

from agentgym_baselines.adapter import AgentGymEnvironment
from agentgym_baselines.codeact import enable_codeact_parsing
from agentgym_baselines.turns import turns_per_completion


class AgentGRPOTrainer(GRPOTrainer):
    """`trl.GRPOTrainer` with agentgym episode metrics and optional CodeAct parsing.

    Args:
        *args: As for `GRPOTrainer`.
        codeact: Read ```python blocks in the model's messages as `execute_code` tool calls (use with
            `environment_factory(env_id, codeact=True)`).
        **kwargs: As for `GRPOTrainer`.
    """

    def __init__(self, *args: Any, codeact: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.codeact = codeact
        if codeact:
            enable_codeact_parsing(self._tokenizer)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        self._log_episode_metrics(output)
        return output

    def _log_episode_metrics(self, output: dict[str, Any]) -> None:
        mode = "train" if getattr(self.model, "training", False) else "eval"
        metrics = self._metrics[mode]
        turns = turns_per_completion(output["completion_mask"], output.get("tool_mask")).float()
        metrics["episodes/assistant_turns"].append(self.accelerator.gather(turns).mean().item())
        candidates: list[Any] = list(self.environments or [])
        environments = [e for e in candidates if isinstance(e, AgentGymEnvironment)]
        if not environments:
            return
        stats = [environment._episode_stats() for environment in environments]
        metrics["episodes/submitted"].append(sum(s["submitted"] for s in stats) / len(stats))
        names = sorted({name for s in stats for name in s["calls"]})
        for name in names:
            calls = sum(s["calls"].get(name, 0) for s in stats)
            failures = sum(s["failures"].get(name, 0) for s in stats)
            metrics[f"tools/{name}/calls"].append(calls / len(stats))
            metrics[f"tools/{name}/failures"].append(failures / calls if calls else 0.0)


def device_settings() -> dict[str, Any]:
    """GRPOConfig settings for this machine: CUDA with bf16 when present, else CPU in float32."""
    if torch.cuda.is_available():
        return {"use_cpu": False, "bf16": torch.cuda.is_bf16_supported(), "fp16": False}
    return {"use_cpu": True, "bf16": False, "fp16": False}
