"""Does training raise test success on a multi-turn tool task? GRPO and TT-OPD, same start, equal steps, on CPU.

    python bench/learn.py --threads 1          # the full run (about 30 minutes on 2 CPU cores)
    python bench/learn.py --quick              # a few minutes: same code path, small numbers
    python bench/learn.py --tuned kl_coef=1.0  # the tuned TT-OPD arm with these TTOPDConfig overrides
    python bench/learn.py --tuned-grpo learning_rate=1e-4  # the tuned GRPO arm with these GRPOConfig overrides

The env (`LearnFhirCoding-v0`, registered here) is FHIR-v0's `condition_coding` family over a population of
`--patients` (2,000) generated patients, unchanged: its store, tasks, train/test split (no patient shared), tools
and verifier. Only the tool menu is cut to the three tools that family's oracle uses (`problem_list`,
`lookup_code`, `submit`), because the full menu renders to about 8,000 tokens of the tiny tokenizer, too long for
CPU training. Every episode takes three calls: read the problem list, look the clinician's wording up in
ICD-10-CM, submit the billable code; the verifier checks the code.

1. A tiny model is built in-process (`agentgym_baselines.tiny.build_tiny_model` at width `--width` 128, ~0.5M
   parameters; nothing is downloaded). Its byte-level BPE is fitted on the tiny corpus plus the TRAIN split's
   text (system prompt, tool schemas, train prompts, the oracle's train episodes).
2. Warm-up: 1,600 supervised steps on the ORACLE's episodes of the TRAIN split only (1,433 tasks), replayed
   through the same TRL environment class and rendered token by token the way the trainer renders rollouts
   (prompt ids, the model's turns, TRL's tool-result suffix ids); loss on the model's turns only. TT-OPD's hint
   never appears. The system prompt and tool schemas every episode starts with run once per batch (same loss
   and gradient, tested). The warmed-up state is cached (keyed by the warm-up's code and settings).
3. Test success of that checkpoint: `--test-tasks` (80) test tasks drawn with the seed, `--samples` (2) rollouts
   each at temperature 1 (the training temperature), with a 95% interval from a bootstrap over tasks (rollouts
   of one task are not independent); one greedy rollout per task; 40 train tasks as a check on memorisation.
4. From that same checkpoint, four arms train `--steps` (80) optimizer steps each with the same rollouts per
   step, through `agentgym_baselines.training.build_trainer` (what `agentgym train grpo|ttopd` runs): GRPO and
   TT-OPD with the shipped defaults (TT-OPD: hint="outcome", negative_advantage="flip", K=2, EMA 0.995/5, hard
   copy 30; lr 1e-3, `agentgym train`'s default for the tiny model), and both again at lr 3e-4 (the tuned
   arms). Then test success again.
5. Over training: reward, completion length (model tokens), assistant turns, tool calls per assistant turn
   (the per-turn tool-use rate) and model tokens per turn, from the trainer's own metrics, to show whether a
   method collapses into long single-turn monologues.

Prints one JSON object (with "figures"), writes bench/results/learn.json and bench/results/learn_curves.png.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import inspect
import json
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import gymnasium as gym
import torch
from agentgym_baselines.adapter import shown_prompt, system_prompt, task_dataset
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.training import RunSettings, build_trainer
from agentgym_baselines.ttopd import TTOPDConfig
from trl import GRPOConfig
from trl.chat_template_utils import parse_response

import agentgym

ENV_ID = "LearnFhirCoding-v0"
BASE_ENV = "FHIR-v0"
FAMILY = "condition_coding"
TOOLS = ("problem_list", "lookup_code", "submit")
RESULTS = Path(__file__).resolve().parent / "results"
# Warmed-up start checkpoints, keyed by the warm-up's code and settings, so bench/curriculum.py (or a
# rerun) starts from the very checkpoint bench/learn.py trained instead of repeating the warm-up.
WARMUP_CACHE = Path(tempfile.gettempdir()) / "agentgym-bench-warmups"
# Completion budget of one whole episode (model tokens and tool results) and the cap on one tool result, chosen
# together so a full oracle episode fits with room to spare (see `budget_check` in the report).
MAX_COMPLETION_LENGTH = 512
OUTPUT_LIMIT = 400
# The FHIR-v0 population the tasks come from (`gym.make("FHIR-v0", patients=N)`; FHIR-v0's own default is
# 400). With 400 patients the family has 278 train tasks, and the warm-up memorised them: train success 0.64,
# test 0.014. With 2,000 it has 1,433, and the start does as well on test tasks as on train tasks.
PATIENTS = 2000
# Width of the tiny model (`build_tiny_model(hidden_size=...)`; `tiny:random` is 64). In a trial with the same
# warm-up, the start solved 10 of 80 test tasks greedily at 128 against 6 at 64.
WIDTH = 128
TEST_TASKS, QUICK_TEST_TASKS = 80, 16
WARMUP_LEARNING_RATE = 3e-3
WARMUP_STEPS, QUICK_WARMUP_STEPS = 1600, 20
STEPS, QUICK_STEPS = 80, 4
# The tuned arms the full run adds beside the shipped defaults (lr 1e-3 for the tiny model, which wrecked the
# warm start within 10-20 steps in earlier runs): the same methods at lr 3e-4. `--tuned ""` drops one.
TUNED_LEARNING_RATE = "learning_rate=3e-4"


def progress(message: str) -> None:
    print(f"[learn {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- the env
def make_env(**kwargs: Any) -> Any:
    """FHIR-v0 restricted to the condition_coding family and the tools its oracle uses."""
    kwargs.setdefault("families", [FAMILY])
    env = gym.make(BASE_ENV, **kwargs).unwrapped
    env.tools = {name: env.tools[name] for name in TOOLS}
    env.tool_schemas = [env.tools[name].schema for name in TOOLS]
    return env


def register() -> None:
    if ENV_ID not in gym.registry:
        agentgym.register(id=ENV_ID, entry_point=make_env)


def env_kwargs() -> dict[str, Any]:
    return {"output_limit": OUTPUT_LIMIT, "patients": PATIENTS}


def train_split_text(output_limit: int = OUTPUT_LIMIT) -> list[str]:
    """Text of the TRAIN split as the model reads and writes it: the system prompt, the tool schemas, each train
    task's prompt (after the system prompt, as each episode has it), and its oracle episode (each call and its result, cut to `output_limit`). No test task and no
    TT-OPD hint appear."""
    env = gym.make(ENV_ID, **{**env_kwargs(), "output_limit": output_limit})
    try:
        inner = env.unwrapped
        system, lines = system_prompt(inner), [json.dumps(inner.tool_schemas)]
        for task in inner.task_set.filter(split="train"):
            lines += [system, task.prompt]  # as each episode reads them
            env.reset(options={"task_id": task.id})
            for action in task.solution:
                observation, *_ = env.step(action)
                lines.append(json.dumps({"name": action["name"], "arguments": action["arguments"]}))
                lines.append(str(observation))
    finally:
        env.close()
    return lines


def build_model(seed: int) -> tuple[Any, Any]:
    """`tiny:random` at width `WIDTH`, with its byte-level BPE fitted on the tiny corpus plus `train_split_text()`.

    The stock tiny tokenizer spends its merges on its own corpus, so this env's prompt is ~900 tokens and an
    oracle episode ~1,500; fitted on the train split's text as well, they are ~540 and ~750, which halves every
    step of warm-up, training and evaluation. The model is `build_tiny_model`'s (same shape, same init).
    """
    register()
    return build_tiny_model(seed, hidden_size=WIDTH, corpus=train_split_text())


# ----------------------------------------------------------------------------------------- statistics
def bootstrap_interval(per_task: list[list[float]], seed: int, resamples: int = 2000) -> tuple[float, float]:
    """95% percentile interval of the mean success, resampling tasks (with all their rollouts)."""
    if not per_task:
        return 0.0, 1.0
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        chosen = [per_task[rng.randrange(len(per_task))] for _ in per_task]
        values = [value for rollouts in chosen for value in rollouts]
        means.append(sum(values) / len(values))
    means.sort()
    return means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))]


def wilson(successes: float, total: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson 95% interval (for the per-episode view; the bootstrap over tasks is the one reported first)."""
    if total == 0:
        return 0.0, 1.0
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * ((p * (1 - p) / total + z * z / (4 * total * total)) ** 0.5) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


# ----------------------------------------------------------------------------------------- rendering
class Renderer:
    """Renders episodes exactly as the trainer does, by asking a trainer built for this env.

    `prompt_ids` is TRL's prompt (training chat template, the environment class's tools), a model turn is its
    text tokens plus eos, and a tool result is `_get_tool_suffix_ids` of TRL's tool message.
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.tokenizer = trainer.processing_class
        self.environment_class = trainer.environment_factories[None]
        self.tools = trainer._env_tools[None]

    def prompt_ids(self, prompt: list[dict[str, Any]]) -> list[int]:
        ids = self.tokenizer.apply_chat_template([prompt], tools=self.tools, chat_template=self.trainer.chat_template,
                                                 add_generation_prompt=True, tokenize=True, return_dict=True,
                                                 **self.trainer.chat_template_kwargs)["input_ids"][0]
        return list(ids)

    def call_ids(self, name: str, arguments: dict[str, Any]) -> list[int]:
        text = "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]

    def suffix_ids(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        return list(self.trainer._get_tool_suffix_ids(tool_messages))


def run_call(instance: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call on an environment instance, answered as TRL answers it (errors become {"error": ...})."""
    method = getattr(instance, name, None) if name in TOOLS else None
    try:
        if method is None:
            raise ValueError(f"Tool {name} not found.")
        result: Any = method(**arguments)
    except Exception as error:  # noqa: BLE001 (TRL shows any tool exception to the model; so does this loop)
        result = {"error": str(error)}
    return {"role": "tool", "name": name, "content": str(result)}


def oracle_sequences(renderer: Renderer, rows: list[dict[str, Any]], tasks: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
    """(input ids, labels) of the oracle's episode of each row: the task's solution replayed through the TRL
    environment class, rendered as a TRL rollout, ending with an empty turn (eos) after `submit`'s result."""
    sequences = []
    eos = renderer.tokenizer.eos_token_id
    instance = renderer.environment_class()  # reset per episode, as TRL reuses its instances
    for row in rows:
        task = tasks[row["task_id"]]
        ids = renderer.prompt_ids(shown_prompt(row, instance.reset(**row)))
        labels = [-100] * len(ids)
        for action in task.solution:
            target = renderer.call_ids(action["name"], action["arguments"])
            ids, labels = ids + target, labels + target
            suffix = renderer.suffix_ids([run_call(instance, action["name"], action["arguments"])])
            ids, labels = ids + suffix, labels + [-100] * len(suffix)
        ids, labels = ids + [eos], labels + [eos]
        if instance.get_reward() < 1.0:
            raise RuntimeError(f"the oracle did not solve {task.id} through the environment class")
        sequences.append((ids, labels))
    return sequences


def pad_batch(sequences: list[list[int]], pad: int, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(sequence) for sequence in sequences)
    ids = torch.full((len(sequences), width), pad, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        span = slice(width - len(sequence), width) if left else slice(0, len(sequence))
        ids[row, span] = torch.tensor(sequence)
        mask[row, span] = 1
    return ids, mask


def turn_index(labels: torch.Tensor) -> torch.Tensor:
    """For each labelled position, which model turn of its episode it is in (0, 1, ...); -1 elsewhere."""
    labelled = labels != -100
    starts = labelled & ~torch.cat([torch.zeros_like(labelled[:, :1]), labelled[:, :-1]], dim=1)
    return torch.where(labelled, starts.long().cumsum(dim=1) - 1, torch.full_like(labels, -1))


def shared_prefix_length(sequences: list[tuple[list[int], list[int]]]) -> int:
    """How many leading ids every sequence has in common and unlabelled (the system prompt and the tools)."""
    first = sequences[0][0]
    length = min(len(ids) for ids, _ in sequences)
    for index in range(length):
        if sequences[0][1][index] != -100 or any(ids[index] != first[index] for ids, _ in sequences):
            return index
    return length


def turn_loss(model: Any, ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor,
              reduction: str = "mean", prefix: torch.Tensor | None = None) -> torch.Tensor:
    """Next-token cross-entropy over the labelled positions (the model's turns), their mean by default.

    The same loss as `model(..., labels=labels).loss` on `prefix + ids`, computed in two ways that save time:
    - the output head runs on the labelled positions only (an episode is ~1,000 tokens, ~190 of them the
      model's);
    - `prefix` (ids every row starts with: the system prompt and the tool schemas, ~720 tokens) runs once,
      not once per row: its keys and values are repeated for the batch, with their gradient, so the loss and
      its gradient are those of the full rows (a test checks they agree).
    """
    cache = None
    if prefix is not None and prefix.numel():
        cache = model.model(input_ids=prefix[None], use_cache=True).past_key_values
        cache.batch_repeat_interleave(ids.size(0))
        mask = torch.cat([torch.ones((ids.size(0), prefix.numel()), dtype=mask.dtype), mask], dim=1)
    hidden = model.model(input_ids=ids, attention_mask=mask, past_key_values=cache,
                         use_cache=cache is not None).last_hidden_state[:, :-1]
    targets = labels[:, 1:]
    chosen = targets != -100
    logits = model.lm_head(hidden[chosen])
    return torch.nn.functional.cross_entropy(logits.float(), targets[chosen], reduction=reduction)


def warm_up(model: Any, sequences: list[tuple[list[int], list[int]]], steps: int, seed: int, pad: int,
            batch_size: int = 8, learning_rate: float = WARMUP_LEARNING_RATE) -> dict[str, Any]:
    """Supervised steps (AdamW, gradient norm clipped at 1; the learning rate ramps up over the first 5% of
    steps, stays, and falls linearly to a tenth over the last 25%) on oracle episodes; loss on the model's turns
    only. The tiny model learns to copy (the clinician's wording into `lookup_code`, the code into `submit`)
    abruptly, after some 400 steps at 3e-3: the constant stretch is what gets it there."""
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    ramp, fall = max(1, steps // 20), max(1, steps // 4)

    def factor(step: int) -> float:
        return min(1.0, (step + 1) / ramp) * max(0.1, min(1.0, (steps - step) / fall))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    shared = max(0, shared_prefix_length(sequences) - 1)  # keep one shared id per row: the loss reads hidden[:, :-1]
    prefix = torch.tensor(sequences[0][0][:shared], dtype=torch.long)
    sequences = [(ids[shared:], labels[shared:]) for ids, labels in sequences]
    model.train()
    started = time.perf_counter()
    losses: list[float] = []
    per_turn: list[list[float]] = []  # recent mean loss of each model turn (call 1, call 2, submit, end)
    for step in range(steps):
        chosen = [rng.choice(sequences) for _ in range(batch_size)]
        ids, mask = pad_batch([item[0] for item in chosen], pad, left=False)
        labels, _ = pad_batch([item[1] for item in chosen], -100, left=False)
        token_losses = turn_loss(model, ids, mask, labels, reduction="none", prefix=prefix)
        loss = token_losses.mean()
        turns = turn_index(labels)[:, 1:][labels[:, 1:] != -100]
        per_turn.append([token_losses[turns == turn].mean().item() for turn in range(int(turns.max()) + 1)])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if steps >= 100 and (step + 1) % (steps // 10) == 0:
            recent = per_turn[-20:]
            by_turn = [round(sum(item[turn] for item in recent) / len(recent), 3) for turn in range(min(map(len, recent)))]
            progress(f"warm-up step {step + 1}/{steps}: loss {sum(losses[-20:]) / len(losses[-20:]):.3f}, "
                     f"per model turn {by_turn}")
    tail = losses[-10:] or [float("nan")]
    return {"steps": steps, "episodes": len(sequences), "batch_size": batch_size, "learning_rate": learning_rate,
            "schedule": "ramp over 5% of steps, constant, linear fall to 10% over the last 25%; grad norm clipped at 1",
            "first_loss": round(losses[0], 4) if losses else None, "final_loss": round(sum(tail) / len(tail), 4),
            "final_loss_per_model_turn": [round(sum(item[turn] for item in per_turn[-10:]) / len(per_turn[-10:]), 4)
                                          for turn in range(min(map(len, per_turn[-10:])))] if per_turn else [],
            "seconds": round(time.perf_counter() - started, 1)}


# ----------------------------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate(model: Any, renderer: Renderer, rows: list[dict[str, Any]], samples: int, seed: int,
             max_turns: int, budget: int = MAX_COMPLETION_LENGTH, batch_size: int = 4,
             greedy: bool = False) -> dict[str, Any]:
    """Success of `samples` rollouts per task at temperature 1 (or one greedy rollout), multi-turn, under the
    training budget.

    Rollouts are generated `batch_size` at a time: a small batch wastes less on left padding and on waiting for
    its longest rollout (on 2 cores, 80 tasks x 2 took 24 s at 4, 29 s at 8, 69 s at 32 and 275 s at 160).
    Each rollout is generated turn by turn (prompt ids + the model's turns + TRL's tool-result suffixes, the
    budget counting everything after the prompt, as in training), its tool calls run on its own environment
    instance; it ends at submit, at a turn without a tool call, at `max_turns`, or when the budget is spent.
    """
    torch.manual_seed(seed)
    tokenizer = renderer.tokenizer
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    model.eval()
    episodes = [(index, row) for index, row in enumerate(rows) for _ in range(1 if greedy else samples)]
    outcomes: list[dict[str, Any]] = []
    pool = [renderer.environment_class() for _ in range(min(batch_size, len(episodes)))]
    for start in range(0, len(episodes), batch_size):
        chunk = episodes[start:start + batch_size]
        states = []
        for (task_index, row), instance in zip(chunk, pool):
            prompt = renderer.prompt_ids(shown_prompt(row, instance.reset(**row)))
            states.append({"task": task_index, "instance": instance, "ids": prompt, "prompt_length": len(prompt),
                           "open": True, "turns": 0, "calls": 0, "model_tokens": 0})
        for _ in range(max_turns):
            active = [state for state in states if state["open"]]
            if not active:
                break
            room = max(1, min(budget - (len(state["ids"]) - state["prompt_length"]) for state in active))
            input_ids, attention = pad_batch([state["ids"] for state in active], pad, left=True)
            sampling = {"do_sample": False} if greedy else {"do_sample": True, "temperature": 1.0, "top_k": 0,
                                                              "top_p": 1.0}
            output = model.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=room,
                                    eos_token_id=eos, pad_token_id=pad, **sampling)
            for row_index, state in enumerate(active):
                left = budget - (len(state["ids"]) - state["prompt_length"])
                generated = output[row_index, input_ids.size(1):].tolist()[:max(left, 0)]
                if eos in generated:
                    generated = generated[: generated.index(eos) + 1]
                calls = parse_response(tokenizer, generated, prefix=state["ids"], tools=renderer.tools).get(
                    "tool_calls") or []
                state["ids"] = state["ids"] + generated
                state["turns"] += 1
                state["model_tokens"] += len(generated)
                if not calls or eos not in generated:
                    state["open"] = False
                    continue
                messages = []
                for call in calls:
                    function = call.get("function", {})
                    arguments = function.get("arguments")
                    messages.append(run_call(state["instance"], str(function.get("name")),
                                             arguments if isinstance(arguments, dict) else {}))
                state["calls"] += len(calls)
                suffix = renderer.suffix_ids(messages)
                if state["instance"]._done or len(state["ids"]) + len(suffix) - state["prompt_length"] > budget:
                    state["open"] = False
                    continue
                state["ids"] = state["ids"] + suffix
        for state in states:
            instance = state["instance"]
            outcomes.append({"task": state["task"], "success": float(instance.get_reward() >= 1.0),
                             "submitted": float(instance._submitted), "turns": state["turns"],
                             "calls": state["calls"], "model_tokens": state["model_tokens"]})
    per_task: list[list[float]] = [[] for _ in rows]
    for outcome in outcomes:
        per_task[outcome["task"]].append(outcome["success"])
    count = len(outcomes)
    mean = sum(outcome["success"] for outcome in outcomes) / count
    low, high = bootstrap_interval(per_task, seed)
    wilson_low, wilson_high = wilson(sum(outcome["success"] for outcome in outcomes), count)

    def average(key: str) -> float:
        return round(sum(outcome[key] for outcome in outcomes) / count, 3)

    turns = sum(outcome["turns"] for outcome in outcomes)
    return {"success": round(mean, 4), "ci95": [round(low, 4), round(high, 4)],
            "ci95_wilson_per_episode": [round(wilson_low, 4), round(wilson_high, 4)],
            "tasks": len(rows), "episodes": count, "tasks_solved_at_least_once": sum(1 for v in per_task if any(v)),
            "submitted": average("submitted"), "assistant_turns": average("turns"),
            "tool_calls_per_turn": round(sum(outcome["calls"] for outcome in outcomes) / max(turns, 1), 3),
            "model_tokens": average("model_tokens")}


# ----------------------------------------------------------------------------------------- training
def trainer_config(method: str, steps: int, tuned: dict[str, Any] | None = None,
                   budget: int = MAX_COMPLETION_LENGTH) -> dict[str, Any]:
    """The run's config: `agentgym train`'s defaults plus the step count, the budget and no checkpoints.

    Nothing about the methods is changed: GRPO is GRPOConfig's defaults (through `make_config`), TT-OPD is
    TTOPDConfig's defaults; `tuned` (the optional third arm) overrides TT-OPD fields.
    """
    config: dict[str, Any] = {"max_steps": steps, "max_completion_length": budget,
                              "save_strategy": "no"}
    if tuned:
        config.update(tuned)
    return config


def build(method: str, model: Any, tokenizer: Any, steps: int, seed: int, output: Path,
          tuned: dict[str, Any] | None = None, budget: int = MAX_COMPLETION_LENGTH, *,
          curriculum: str | None = None, **env_overrides: Any) -> Any:
    """The trainer `agentgym train METHOD --env LearnFhirCoding-v0` builds, on `model` (`--curriculum` when
    `curriculum` names a sampler; `env_overrides`, e.g. feedback="adaptive", go to the training env only)."""
    extra = {"curriculum": curriculum} if curriculum is not None else {}
    settings = RunSettings(method=method, env_id=ENV_ID, model="tiny:random", output_dir=str(output),
                           config=trainer_config(method, steps, tuned, budget), seed=seed,
                           env_kwargs={**env_kwargs(), **env_overrides}, **extra)
    return build_trainer(settings, model, tokenizer)


CURVE_KEYS = {"reward": "reward", "completion_length": "completions/mean_length",
              "assistant_turns": "episodes/assistant_turns", "submitted": "episodes/submitted",
              "cut_by_budget": "episodes/cut_by_budget", "groups_without_reward_variance": "frac_reward_zero_std",
              "reverse_kl": "ttopd/reverse_kl"}


def curves_of(log_history: list[dict[str, Any]]) -> dict[str, list[float | None]]:
    """Per-step training curves from the trainer's log, with tool calls per assistant turn and tokens per turn."""
    entries = [entry for entry in log_history if "reward" in entry]
    curves: dict[str, list[float | None]] = {name: [entry.get(key) for entry in entries]
                                             for name, key in CURVE_KEYS.items()}
    per_turn, tokens_per_turn = [], []
    for entry in entries:
        calls = sum(value for key, value in entry.items()
                    if key.startswith("tools/") and key.endswith("/calls") and value is not None)
        turns = entry.get("episodes/assistant_turns") or 0.0
        per_turn.append(round(calls / turns, 4) if turns else None)
        length = entry.get("completions/mean_length")
        tokens_per_turn.append(round(length / turns, 2) if turns and length is not None else None)
    curves["tool_calls_per_turn"] = per_turn
    curves["model_tokens_per_turn"] = tokens_per_turn
    if not any(value is not None for value in curves["reverse_kl"]):
        del curves["reverse_kl"]
    return curves


def mean_of(values: list[float | None], part: slice) -> float | None:
    kept = [value for value in values[part] if value is not None]
    return round(sum(kept) / len(kept), 4) if kept else None


def plot(curves: dict[str, dict[str, list[float | None]]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("reward", "training reward"), ("tool_calls_per_turn", "tool calls per assistant turn"),
              ("assistant_turns", "assistant turns per episode"), ("completion_length", "model tokens per episode")]
    figure, axes = plt.subplots(2, 2, figsize=(11, 7))
    for axis, (key, label) in zip(axes.flat, panels, strict=True):
        for method, series in curves.items():
            values = [float("nan") if value is None else value for value in series.get(key, [])]
            window = 5
            smooth = [sum(values[max(0, i - window + 1): i + 1]) / len(values[max(0, i - window + 1): i + 1])
                      for i in range(len(values))]
            (line,) = axis.plot(range(1, len(values) + 1), smooth, label=method)
            axis.plot(range(1, len(values) + 1), values, alpha=0.25, color=line.get_color())
        axis.set_xlabel("optimizer step")
        axis.set_ylabel(label)
        axis.legend()
    figure.suptitle(title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)


def parse_tuned(text: str | None, flag: str = "--tuned", config_class: Any = TTOPDConfig) -> dict[str, Any] | None:
    """`KEY=VALUE,...` (values read as JSON when they parse, else as text) for `config_class`; None when empty."""
    if not text:
        return None
    known = set(config_class.__dataclass_fields__)
    tuned: dict[str, Any] = {}
    for item in text.split(","):
        key, separator, value = item.partition("=")
        key = key.strip()
        if not separator or key not in known:
            raise SystemExit(f"{flag}: {item!r} is not KEY=VALUE with a {config_class.__name__} field "
                             "(e.g. learning_rate=1e-4)")
        try:
            tuned[key] = json.loads(value)
        except json.JSONDecodeError:
            tuned[key] = value.strip()
    return tuned


def add_setup_arguments(parser: argparse.ArgumentParser, default_steps: int, quick_steps: int, *,
                        patients: int = PATIENTS, width: int = WIDTH) -> None:
    """The options of the shared setup (warm-up, evaluation, budget, population, model width), for this bench and
    bench/curriculum.py (which keeps the population and width it was measured with)."""
    parser.add_argument("--quick", action="store_true", help="A few minutes: fewer warm-up and training steps, "
                        "fewer test rollouts (same code path; numbers are not evidence).")
    parser.add_argument("--steps", type=int, help=f"Optimizer steps per arm (default {default_steps}; "
                        f"quick {quick_steps}).")
    parser.add_argument("--warmup-steps", type=int, help=f"Supervised warm-up steps (default {WARMUP_STEPS}; "
                        f"quick {QUICK_WARMUP_STEPS}).")
    parser.add_argument("--samples", type=int, help="Test rollouts per test task (default 2; quick 1).")
    parser.add_argument("--test-tasks", type=int, help=f"Evaluate on N test tasks drawn at random with the seed "
                        f"(default {TEST_TASKS}; quick {QUICK_TEST_TASKS}; 0: all).")
    parser.add_argument("--train-tasks", type=int, help="Warm up on the first N train tasks only (default: all).")
    parser.add_argument("--max-completion-length", type=int, default=MAX_COMPLETION_LENGTH,
                        help="Tokens of one whole episode, in training and in evaluation (tests use a small one).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--patients", type=int, default=patients, help=f"Size of the FHIR-v0 population the "
                        f"tasks come from (default {patients}).")
    parser.add_argument("--width", type=int, default=width, help=f"Hidden size of the tiny model (default {width}; "
                        "tiny:random is 64).")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice; on a loaded machine "
                        "1 is faster, since generation is many small steps)")


@dataclass
class Setup:
    """What every arm starts from: the warmed-up model (and its state to restore), the renderer, the splits."""

    model: Any
    tokenizer: Any
    renderer: Renderer
    start_state: dict[str, Any]
    tasks: dict[str, Any]
    train_rows: list[dict[str, Any]]
    test_rows: list[dict[str, Any]]
    train_probe_rows: list[dict[str, Any]]
    warm: dict[str, Any]
    steps: int
    samples: int
    budget: int
    max_turns: int
    seed: int
    evaluation_seed: int
    work: Path
    quick: bool
    started: float

    def evaluate(self) -> dict[str, Any]:
        """The model's test success (sampled and greedy) and a train sample, as every checkpoint is reported."""
        def run(rows: list[dict[str, Any]], samples: int, greedy: bool = False) -> dict[str, Any]:
            return evaluate(self.model, self.renderer, rows, samples, self.evaluation_seed, self.max_turns,
                            self.budget, greedy=greedy)

        return {"test": run(self.test_rows, self.samples), "test_greedy": run(self.test_rows, 1, greedy=True),
                "train_sample": run(self.train_probe_rows, 1)}

    def finish(self, report: dict[str, Any], curves: dict[str, Any], out: Path) -> int:
        """Write the report with its curves to `out`, remove the trainers' folders, print the report (one JSON
        object on stdout); the exit status."""
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**report, "curves": curves}, indent=1, default=str))
        shutil.rmtree(self.work)
        print(json.dumps(report, default=str))
        return 0

    def describe(self, bench: str, argv: list[str] | None) -> dict[str, Any]:
        """The report's header: command, env, model, budget, splits and warm-up."""
        return {
            "bench": bench, "mode": "quick" if self.quick else "full",
            "command": f"python bench/{bench}.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "env": f"{ENV_ID} = {BASE_ENV} family {FAMILY}, tools {list(TOOLS)}",
            "model": f"tiny:random at width {WIDTH}", "parameters": sum(p.numel() for p in self.model.parameters()),
            "patients": PATIENTS,
            "torch_threads": torch.get_num_threads(), "seed": self.seed,
            "budget": {"max_completion_length": self.budget, "output_limit": OUTPUT_LIMIT,
                       "max_tool_calling_iterations": self.max_turns},
            "splits": {"train_tasks": len(self.train_rows), "test_tasks": len(self.test_rows),
                       "test_samples_per_task": self.samples},
            "warmup": self.warm,
        }


def prepare(options: argparse.Namespace, default_steps: int, quick_steps: int, name: str = "learn") -> Setup:
    """Build the tiny model, warm it up on the train split's oracle episodes, and keep that state."""
    quick = options.quick
    steps = options.steps if options.steps is not None else (quick_steps if quick else default_steps)
    warmup_steps = options.warmup_steps if options.warmup_steps is not None else (
        QUICK_WARMUP_STEPS if quick else WARMUP_STEPS)
    samples = options.samples if options.samples is not None else (1 if quick else 2)
    test_limit = options.test_tasks if options.test_tasks is not None else (QUICK_TEST_TASKS if quick else TEST_TASKS)
    global PATIENTS, WIDTH
    PATIENTS, WIDTH = options.patients, options.width
    started = time.perf_counter()
    if options.threads:
        torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    model, tokenizer = build_model(options.seed)
    work = Path(tempfile.mkdtemp(prefix=f"agentgym-bench-{name}-"))  # trainers' output folders (metrics.jsonl)

    # One trainer renders prompts, model turns and tool results for the warm-up and the evaluation.
    budget = options.max_completion_length
    renderer = Renderer(build("grpo", model, tokenizer, 1, options.seed, work / "render", budget=budget))
    probe = gym.make(ENV_ID, **env_kwargs())
    tasks = {task.id: task for task in probe.unwrapped.task_set}
    max_turns = probe.unwrapped.max_turns
    probe.close()
    train_rows = list(task_dataset(ENV_ID, split="train", **env_kwargs()))[:options.train_tasks]
    test_rows = list(task_dataset(ENV_ID, split="test", **env_kwargs()))
    if test_limit and test_limit < len(test_rows):  # a seeded sample, in the split's order
        kept = set(random.Random(options.seed).sample(range(len(test_rows)), test_limit))
        test_rows = [row for index, row in enumerate(test_rows) if index in kept]
    sequences = oracle_sequences(renderer, train_rows, tasks)
    completion_lengths = sorted(len(ids) - next(index for index, label in enumerate(labels) if label != -100)
                                for ids, labels in sequences)
    code = [inspect.getsource(function) for function in (build_model, train_split_text, oracle_sequences,
                                                          turn_loss, shared_prefix_length, warm_up, Renderer)]
    key = hashlib.sha256(json.dumps([code, WARMUP_LEARNING_RATE, OUTPUT_LIMIT, WIDTH, options.seed, warmup_steps,
                                     [row["task_id"] for row in train_rows], budget]).encode()).hexdigest()[:16]
    cached = WARMUP_CACHE / f"{key}.pt"
    if cached.exists():  # the same warm-up (same code, seed, steps, tasks) done by an earlier run of a bench
        saved = torch.load(cached, weights_only=False)
        model.load_state_dict(saved["state"])
        warm = {**saved["warm"], "reused_from": str(cached)}
        progress(f"warm-up: reusing {cached}")
    else:
        progress(f"warm-up: {warmup_steps} supervised steps on {len(sequences)} oracle episodes of the train split")
        warm = warm_up(model, sequences, warmup_steps, options.seed, tokenizer.pad_token_id)
        if warmup_steps >= 100:
            WARMUP_CACHE.mkdir(parents=True, exist_ok=True)
            torch.save({"state": model.state_dict(), "warm": warm}, cached)
    warm["oracle_completion_tokens_median_max"] = [completion_lengths[len(completion_lengths) // 2],
                                                   completion_lengths[-1]]
    train_probe_rows = random.Random(options.seed).sample(train_rows, min(len(train_rows), len(test_rows), 40))
    return Setup(model=model, tokenizer=tokenizer, renderer=renderer, start_state=copy.deepcopy(model.state_dict()),
                 tasks=tasks, train_rows=train_rows, test_rows=test_rows, train_probe_rows=train_probe_rows,
                 warm=warm, steps=steps, samples=samples, budget=budget, max_turns=max_turns, seed=options.seed,
                 evaluation_seed=options.seed + 1, work=work, quick=quick, started=started)


def quick_path(out: Path, default: Path, quick: bool) -> Path:
    """--quick writes NAME_quick.json beside the default results file, so it never replaces the full run's."""
    return out.with_name(out.stem + "_quick.json") if quick and out == default else out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_setup_arguments(parser, default_steps=STEPS, quick_steps=QUICK_STEPS)
    parser.add_argument("--methods", default="grpo,ttopd")
    parser.add_argument("--tuned", help="TT-OPD overrides for an arm 'ttopd-tuned', e.g. kl_coef=1.0 (default "
                        f"{TUNED_LEARNING_RATE!r}, none with --quick; '' for none)")
    parser.add_argument("--tuned-grpo", help="GRPOConfig overrides for an arm 'grpo-tuned' (default "
                        f"{TUNED_LEARNING_RATE!r}, none with --quick; '' for none)")
    parser.add_argument("--out", type=Path, default=RESULTS / "learn.json")
    options = parser.parse_args(argv)
    default_tuned = "" if options.quick else TUNED_LEARNING_RATE
    tuned_by_arm = {"ttopd-tuned": parse_tuned(default_tuned if options.tuned is None else options.tuned),
                    "grpo-tuned": parse_tuned(default_tuned if options.tuned_grpo is None else options.tuned_grpo,
                                              "--tuned-grpo", GRPOConfig)}
    methods = [method.strip() for method in options.methods.split(",") if method.strip()]
    methods += [arm for arm in ("grpo-tuned", "ttopd-tuned") if tuned_by_arm[arm]]
    for method in methods:
        if method not in ("grpo", "ttopd", "grpo-tuned", "ttopd-tuned"):
            raise SystemExit(f"--methods: unknown method {method!r}; use grpo and/or ttopd")
    setup = prepare(options, default_steps=STEPS, quick_steps=QUICK_STEPS)
    model, renderer, steps = setup.model, setup.renderer, setup.steps
    progress(f"evaluating the start checkpoint on {len(setup.test_rows)} test tasks x {setup.samples}")
    before_all = setup.evaluate()
    before = before_all["test"]
    report: dict[str, Any] = {**setup.describe("learn", argv), "before": before_all, "methods": {}}
    curves: dict[str, dict[str, list[float | None]]] = {}
    for method in methods:
        model.load_state_dict(setup.start_state)
        trainer = build("ttopd" if method.startswith("ttopd") else "grpo", model, setup.tokenizer, steps,
                        setup.seed, setup.work / method, tuned_by_arm.get(method), setup.budget)
        began = time.perf_counter()
        progress(f"training {method}: {steps} steps")
        with contextlib.redirect_stdout(sys.stderr):  # TRL prints its logs; stdout carries the one JSON object
            trainer.train()
        seconds = round(time.perf_counter() - began, 1)
        curves[method] = curves_of(trainer.state.log_history)
        progress(f"evaluating {method}")
        after_all = setup.evaluate()
        after = after_all["test"]
        first, last = slice(0, max(1, steps // 5)), slice(-max(1, steps // 5), None)
        summary = {
            "steps": trainer.state.global_step, "train_seconds": seconds,
            "rollouts": trainer.state.global_step * trainer.args.generation_batch_size,
            "config": trainer_config(method, steps, tuned_by_arm.get(method), setup.budget),
            "after": after_all,
            "test_success_change": round(after["success"] - before["success"], 4),
            "over_training_first_fifth_vs_last_fifth": {
                name: [mean_of(series, first), mean_of(series, last)] for name, series in curves[method].items()},
            "fit_notes": getattr(trainer, "fit_notes", []),
        }
        if method.startswith("ttopd"):
            config = trainer.args
            summary["ttopd_settings"] = {key: getattr(config, key) for key in (
                "kl_coef", "distill_turns", "ema_decay", "ema_every", "hard_copy_every", "hint", "hint_position",
                "negative_advantage")}
            summary["teacher_updates"] = len(trainer.teacher_updates)
        report["methods"][method] = summary
    out = quick_path(options.out, RESULTS / "learn.json", setup.quick)
    png = out.with_name(out.stem + "_curves.png")
    plot(curves, png, f"{ENV_ID} ({FAMILY}, {PATIENTS} patients), tiny model at width {WIDTH}, CPU, {steps} steps per arm")
    root = RESULTS.parent.parent
    report["curves_png"] = str(png.resolve().relative_to(root)) if png.resolve().is_relative_to(root) else str(png)
    report["figures"] = {
        "before_test_success": before["success"], "before_test_ci95": before["ci95"],
        **{f"{method}_after_test_success": report["methods"][method]["after"]["test"]["success"]
           for method in methods},
        **{f"{method}_after_test_ci95": report["methods"][method]["after"]["test"]["ci95"] for method in methods},
        **{f"{method}_tool_calls_per_turn_first_last": report["methods"][method][
            "over_training_first_fifth_vs_last_fifth"]["tool_calls_per_turn"] for method in methods},
        **{f"{method}_completion_length_first_last": report["methods"][method][
            "over_training_first_fifth_vs_last_fifth"]["completion_length"] for method in methods},
        "steps_per_method": steps, "rollouts_per_step": renderer.trainer.args.generation_batch_size,
        "total_seconds": round(time.perf_counter() - setup.started, 1),
    }
    return setup.finish(report, curves, out)


if __name__ == "__main__":
    sys.exit(main())
