"""Training baselines for agentgym environments, on TRL's `GRPOTrainer`.

- `agentgym_baselines.adapter`: `environment_factory(env_id)` and `task_dataset(env_id)` for TRL.
- `agentgym_baselines.tiny`: `build_tiny_model(seed)`, a ~100K-parameter model and tokenizer for smoke runs.
- `agentgym_baselines.grpo`: `AgentGRPOTrainer` (GRPO with per-episode tool metrics and CodeAct parsing).
- `agentgym_baselines.ttopd`: `TTOPDConfig` and `TTOPDTrainer` (turn-truncated on-policy distillation).
- `agentgym_baselines.cli`: `agentgym train grpo|ttopd`.

Heavy imports (torch, transformers, trl) happen in the submodules, not here.
"""

__version__ = "0.1.0"
