"""`agentgym train grpo|ttopd`: the baselines from the command line (mounted through `agentgym.commands`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from agentgym.cli import parse_assignments
from agentgym.curriculum import SAMPLERS

_SHARED_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--env", "env_id", required=True,
                 help="Registered env id, e.g. SQL-v0; several, comma-separated, train one policy on all of them."),
    click.option("--mix", default=None, metavar="SHARES",
                 help="With several --env: each env's share of the tasks, e.g. 0.4,0.4,0.2 (default: equal)."),
    click.option("--remote", default=None, metavar="URL",
                 help="Run the episodes on an `agentgym serve` server (ws://HOST:PORT); with several --env, one URL "
                      "per env ('-' for one that runs here). --env-arg then gives the server's env arguments."),
    click.option("--label-credit", is_flag=True, default=None,
                 help="Reweight advantages per turn by the turn's diagnosis label (see docs/baselines.md)."),
    click.option("--model", required=True, help="A saved model folder, or tiny:random for a smoke run."),
    click.option("--output", "output_dir", required=True, type=click.Path(file_okay=False),
                 help="Folder for checkpoints, metrics.jsonl and the final model."),
    click.option("--codeact", is_flag=True, help="CodeAct: the model writes ```python blocks calling the tools."),
    click.option("--max-steps", type=int, default=None, help="Optimizer steps (default: one epoch of tasks)."),
    click.option("--split", default="train", show_default=True, help="Task split to train on ('' for all)."),
    click.option("--env-arg", "env_args", multiple=True, metavar="KEY=VALUE",
                 help="Keyword argument for gym.make (repeatable), e.g. --env-arg max_turns=8."),
    click.option("--num-generations", type=int, default=None, help="Rollouts per task (group size; default 8)."),
    click.option("--prompts-per-step", type=int, default=1, show_default=True,
                 help="Tasks per optimizer step; the batch is this times --num-generations."),
    click.option("--learning-rate", type=float, default=None,
                 help="Default: TRL's (1e-6), or 1e-3 for tiny:random."),
    click.option("--max-completion-length", type=int, default=None,
                 help="Token budget of a whole episode: turns plus tool results (default 512; tool results "
                      "are then cut to fit, see docs/baselines.md)."),
    click.option("--max-tool-calls", type=int, default=None,
                 help="Tool-calling rounds per episode (default: the env's max_turns)."),
    click.option("--code-sandbox", type=click.Choice(["auto", "docker", "local"]), default="auto", show_default=True,
                 help="CodeAct: sandbox backend the model's code blocks run in."),
    click.option("--allow-weak-isolation", is_flag=True,
                 help="CodeAct: let --code-sandbox auto use the local backend (weaker isolation) without Docker."),
    click.option("--save-steps", type=int, default=None, help="Checkpoint every N steps (default 100)."),
    click.option("--seed", type=int, default=0, show_default=True),
    click.option("--resume", is_flag=True, help="Continue from the last checkpoint in --output (and its curriculum)."),
    click.option("--curriculum", type=click.Choice(sorted(SAMPLERS)), default=None,
                 help="Task sampler choosing each step's tasks from the outcomes so far (docs/curriculum.md). "
                      "Default: TRL's shuffled passes over the tasks, the same law as uniform."),
    click.option("--curriculum-arg", "curriculum_args", multiple=True, metavar="KEY=VALUE",
                 help="Option of the curriculum, e.g. --curriculum-arg window=32 (repeatable)."),
    click.option("--vllm/--no-vllm", "use_vllm", default=None,
                 help="TRL's vLLM generation (default: on when vLLM is installed and CUDA is present)."),
    click.option("--config-arg", "config_args", multiple=True, metavar="KEY=VALUE",
                 help="Any GRPOConfig (or TTOPDConfig) field, e.g. --config-arg temperature=0.7 (repeatable)."),
]


def _shared(function: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_SHARED_OPTIONS):
        function = option(function)
    return function


def _config(options: dict[str, Any]) -> dict[str, Any]:
    config = parse_assignments(tuple(options.pop("config_args")))
    if options.pop("label_credit"):
        config.setdefault("label_credit", True)
    generations = options.pop("num_generations")
    prompts = options.pop("prompts_per_step")
    if generations is not None:
        config.setdefault("num_generations", generations)
    if generations is not None or prompts != 1:
        config.setdefault("per_device_train_batch_size", prompts * (generations or 8))
    for option, name in (("max_steps", "max_steps"), ("learning_rate", "learning_rate"),
                         ("max_completion_length", "max_completion_length"),
                         ("max_tool_calls", "max_tool_calling_iterations"), ("save_steps", "save_steps")):
        value = options.pop(option)
        if value is not None:
            config.setdefault(name, value)
    return config


def _run(method: str, options: dict[str, Any], extra: dict[str, Any]) -> None:
    from agentgym.cli import known_env
    from agentgym_baselines.training import RunSettings, run_training

    from agentgym_baselines.mixing import parse_env_ids, parse_mix, parse_remotes

    try:
        env_ids = parse_env_ids(options["env_id"])
        mix = parse_mix(options["mix"], len(env_ids)) if options["mix"] is not None else None
        if mix is not None and len(env_ids) == 1:
            raise ValueError("--mix needs several envs in --env (e.g. --env SQL-v0,FHIR-v0 --mix 0.7,0.3)")
        parse_remotes(options["remote"], env_ids)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    for env_id in env_ids:
        known_env(env_id)  # a typo in --env fails here, with "did you mean", before any model loads
    config = _config(options)
    config.update({key: value for key, value in extra.items() if value is not None})
    settings = RunSettings(
        method=method, env_id=options["env_id"], model=options["model"], output_dir=options["output_dir"],
        codeact=options["codeact"], split=options["split"] or None,
        env_kwargs=parse_assignments(tuple(options["env_args"])), config=config, seed=options["seed"],
        resume=options["resume"], use_vllm=options["use_vllm"],
        allow_weak_isolation=options["allow_weak_isolation"], code_sandbox=options["code_sandbox"],
        mix=mix, remote=options["remote"], curriculum=options["curriculum"],
        curriculum_options=parse_assignments(tuple(options["curriculum_args"])),
    )
    if settings.curriculum_options and settings.curriculum is None:
        raise click.UsageError("--curriculum-arg needs --curriculum NAME")
    try:
        summary = run_training(settings)
    except (FileNotFoundError, ValueError, KeyError, TypeError, RuntimeError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(json.dumps(summary, indent=1, default=str))


@click.group()
def train() -> None:
    """Train a model on an agentgym env with TRL: CodeAct GRPO or TT-OPD."""


@train.command("grpo")
@_shared
def grpo_command(**options: Any) -> None:
    """GRPO on the env's verifier reward (CodeAct with --codeact)."""
    _run("grpo", options, {})


@train.command("ttopd")
@_shared
@click.option("--kl-coef", type=float, default=None, help="λ, weight of the reverse KL to the teacher (4.0).")
@click.option("--turns", "distill_turns", type=int, default=None,
              help="K: distil the first K assistant turns; 0 = all (default 2).")
@click.option("--distill-turns", "distill_turn_selection", type=click.Choice(["first", "failed"]), default=None,
              help="Which turns the KL covers: the first K (--turns), or those with a diagnosis failure label "
                   "(first).")
@click.option("--distill-only", is_flag=True, default=None,
              help="Distillation-only pass: rollouts stop after K turns; the loss is the KL term alone.")
@click.option("--ema-decay", type=float, default=None, help="β of the teacher's EMA (0.995).")
@click.option("--ema-every", type=int, default=None, help="n: EMA update every n steps; 0 = never (5).")
@click.option("--hard-copy-every", type=int, default=None, help="m: copy the student every m steps; 0 = never (30).")
@click.option("--hint", type=click.Choice(["outcome", "answer", "none"]), default=None,
              help="Teacher-only hint: the verified outcome, the gold answer, or none (outcome).")
@click.option("--hint-position", type=click.Choice(["system", "user", "end"]), default=None,
              help="Where the hint goes in the teacher's prompt (user).")
@click.option("--negative-advantage", type=click.Choice(["flip", "keep", "skip"]), default=None,
              help="KL on negative-advantage trajectories: flip its sign, keep it, or skip it (flip).")
def ttopd_command(kl_coef: float | None, distill_turns: int | None, distill_turn_selection: str | None,
                  distill_only: bool | None,
                  ema_decay: float | None,
                  ema_every: int | None, hard_copy_every: int | None, hint: str | None, hint_position: str | None,
                  negative_advantage: str | None, **options: Any) -> None:
    """TT-OPD: GRPO plus turn-truncated reverse KL to an EMA teacher that sees the verified outcome."""
    _run("ttopd", options, {
        "kl_coef": kl_coef, "distill_turns": distill_turns, "distill_turn_selection": distill_turn_selection,
        "distill_only": distill_only or None,
        "ema_decay": ema_decay, "ema_every": ema_every,
        "hard_copy_every": hard_copy_every, "hint": hint, "hint_position": hint_position,
        "negative_advantage": negative_advantage,
    })
