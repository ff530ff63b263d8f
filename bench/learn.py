"""Does training raise reward? A tiny model, GRPO and TT-OPD, at most 10 minutes each on CPU.

    python bench/learn.py [--budget-seconds 600] [--eval-episodes 256] [--seed 0]

The env (`LearnCopy-v0`, registered here) is the easiest verifiable task there is: "Submit the word W." with W
one of four words; the verifier checks the submission. A randomly initialised model never writes a tool call,
so the model is first warmed up with supervised steps that teach the call's *format* only: every warm-up
answer is a word drawn at random, independent of the prompt (so reward stays at chance, 1/4). Half of the
warm-up prompts also carry TT-OPD's teacher hint with the answer in it, so that a model that sees the hint can
use it: that is what makes the teacher of TT-OPD informative. The student never sees a hint.

From the same warmed-up model, GRPO and TT-OPD (hint = gold answer, KL kept on every trajectory) each train
for at most `--budget-seconds`. Mean reward on the test split is measured before and after, by sampling at
temperature 1, with Wilson 95% intervals; a method is "ok" when the lower end after is above the upper end
before. Reward curves go to bench/results/learn_curves.png; one JSON object is printed (and saved next to it).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch
from agentgym_baselines.adapter import ToolCallFailed, environment_factory, task_dataset
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.training import RunSettings, build_trainer
from agentgym_baselines.ttopd import TTOPDConfig, hint_text, insert_hint
from transformers import TrainerCallback
from trl.chat_template_utils import add_response_schema, parse_response

import agentgym
from agentgym import Task, ToolEnv

ENV_ID = "LearnCopy-v0"
WORDS = ["apple", "river", "stone", "cloud"]
RESULTS = Path(__file__).resolve().parent / "results"
HINT_TEMPLATE = TTOPDConfig.__dataclass_fields__["hint_template"].default


def make_env(**kwargs: Any) -> ToolEnv:
    tasks = [Task(id=f"copy-{word}-{split}-{index}", domain="bench", family="copy", split=split,
                  prompt=f"Submit the word {word}.", answer=word, difficulty="easy")
             for split, copies in (("train", 16), ("test", 8)) for word in WORDS for index in range(copies)]
    kwargs.setdefault("max_turns", 1)
    kwargs.setdefault("system_prompt", "Answer by calling submit.")
    return ToolEnv(tasks, [], **kwargs)


def wilson(successes: float, total: int, z: float = 1.96) -> tuple[float, float]:
    if total == 0:
        return 0.0, 1.0
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def call_text(answer: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "submit", "arguments": {"answer": answer}}) + "\n</tool_call>"


def prompt_ids(tokenizer: Any, prompt: list[dict[str, Any]], tools: list[Any]) -> list[int]:
    return tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=True,
                                         return_dict=False)


def warm_up(model: Any, tokenizer: Any, steps: int, seed: int, correct: float, batch_size: int = 16) -> dict[str, Any]:
    """Supervised steps on submit calls: half of them with the teacher's hint and the gold answer, the others
    without a hint and with the gold answer for a fraction `correct` of them, a random word otherwise."""
    rng = random.Random(seed)
    rows = list(task_dataset(ENV_ID, split="train"))
    tools = [environment_factory(ENV_ID)().submit]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    started = time.perf_counter()
    loss_value = float("nan")
    for _ in range(steps):
        sequences, labels = [], []
        for _ in range(batch_size):
            row = rng.choice(rows)
            gold = row["prompt"][1]["content"].split()[-1].rstrip(".")
            prompt = row["prompt"]
            if rng.random() < 0.5:
                hint = hint_text("answer", reward=0.0, answer=gold, template=HINT_TEMPLATE)
                prompt, answer = insert_hint(prompt, hint, "user"), gold
            else:
                answer = gold if rng.random() < correct else rng.choice(WORDS)
            context = prompt_ids(tokenizer, prompt, tools)
            target = tokenizer(call_text(answer), add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            sequences.append(context + target)
            labels.append([-100] * len(context) + target)
        width = max(len(sequence) for sequence in sequences)
        input_ids = torch.full((batch_size, width), tokenizer.pad_token_id)
        label_ids = torch.full((batch_size, width), -100)
        attention = torch.zeros((batch_size, width), dtype=torch.long)
        for index, (sequence, label) in enumerate(zip(sequences, labels, strict=True)):
            input_ids[index, : len(sequence)] = torch.tensor(sequence)
            label_ids[index, : len(label)] = torch.tensor(label)
            attention[index, : len(sequence)] = 1
        loss = model(input_ids=input_ids, attention_mask=attention, labels=label_ids).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
    return {"steps": steps, "correct_fraction": correct, "final_loss": round(loss_value, 4), "seconds": round(time.perf_counter() - started, 1)}


@torch.no_grad()
def evaluate(model: Any, tokenizer: Any, episodes: int, seed: int, batch_size: int = 64) -> dict[str, Any]:
    """Mean reward on the test split: one sampled turn per episode, its tool calls run in the env."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    environment_class = environment_factory(ENV_ID)
    rows = list(task_dataset(ENV_ID, split="test"))
    chosen = [rng.choice(rows) for _ in range(episodes)]
    model.eval()
    rewards: list[float] = []
    submitted = 0
    for start in range(0, episodes, batch_size):
        chunk = chosen[start:start + batch_size]
        instances = [environment_class() for _ in chunk]
        contexts = []
        for instance, row in zip(instances, chunk, strict=True):
            instance.reset(**row)
            contexts.append(prompt_ids(tokenizer, row["prompt"], [instance.submit]))
        width = max(len(context) for context in contexts)
        input_ids = torch.full((len(chunk), width), tokenizer.pad_token_id)
        attention = torch.zeros((len(chunk), width), dtype=torch.long)
        for index, context in enumerate(contexts):
            input_ids[index, width - len(context):] = torch.tensor(context)
            attention[index, width - len(context):] = 1
        output = model.generate(input_ids=input_ids, attention_mask=attention, do_sample=True, temperature=1.0,
                                top_k=0, top_p=1.0, max_new_tokens=32, eos_token_id=tokenizer.eos_token_id,
                                pad_token_id=tokenizer.pad_token_id)
        for index, instance in enumerate(instances):
            generated = output[index, width:].tolist()
            if tokenizer.eos_token_id in generated:
                generated = generated[: generated.index(tokenizer.eos_token_id) + 1]
            message = parse_response(tokenizer, generated, prefix=contexts[index])
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                method = getattr(instance, str(function.get("name")), None)
                if function.get("name") in ("reset", "get_reward") or method is None:
                    continue
                try:
                    method(**(function.get("arguments") or {}))
                except (ToolCallFailed, TypeError):
                    pass  # a failed call earns nothing, as in training
            submitted += int(instance._submitted)
            rewards.append(instance.get_reward())
    mean = sum(rewards) / len(rewards)
    low, high = wilson(sum(rewards), len(rewards))
    return {"mean": round(mean, 4), "ci95": [round(low, 4), round(high, 4)], "episodes": len(rewards),
            "submitted": round(submitted / len(rewards), 4)}


class TimeBudget(TrainerCallback):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.perf_counter()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if time.perf_counter() - self.started > self.seconds:
            control.should_training_stop = True


def train(method: str, model: Any, tokenizer: Any, budget: float, seed: int, output: Path,
          options_learning_rate: float, options_max_completion_length: int = 24) -> dict[str, Any]:
    config: dict[str, Any] = {
        "max_steps": 100_000, "num_generations": 8, "per_device_train_batch_size": 16,
        "max_completion_length": options_max_completion_length, "max_tool_calling_iterations": 1, "learning_rate": options_learning_rate,
        "save_strategy": "no", "beta": 0.0, "temperature": 1.0,
    }
    if method == "ttopd":
        config.update({"hint": "answer", "hint_position": "user", "negative_advantage": "keep"})
    settings = RunSettings(method=method, env_id=ENV_ID, model="tiny:random", output_dir=str(output), config=config,
                           seed=seed)
    trainer = build_trainer(settings, model, tokenizer)
    trainer.add_callback(TimeBudget(budget))
    started = time.perf_counter()
    trainer.train()
    curve = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    result = {"steps": trainer.state.global_step, "seconds": round(time.perf_counter() - started, 1),
              "config": {key: value for key, value in config.items() if key != "max_steps"}, "curve": curve}
    if method == "ttopd":
        result["teacher_updates"] = len(trainer.teacher_updates)
        kl = [entry["ttopd/reverse_kl"] for entry in trainer.state.log_history if "ttopd/reverse_kl" in entry]
        result["reverse_kl_first_last"] = [round(kl[0], 4), round(kl[-1], 4)] if kl else None
    return result


def plot(curves: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for name, curve in curves.items():
        window = 10
        smooth = [sum(curve[max(0, i - window + 1): i + 1]) / len(curve[max(0, i - window + 1): i + 1])
                  for i in range(len(curve))]
        (line,) = axis.plot(range(1, len(curve) + 1), smooth, label=f"{name} (mean of last {window})")
        axis.plot(range(1, len(curve) + 1), curve, alpha=0.25, color=line.get_color())
    axis.axhline(1 / len(WORDS), linestyle=":", color="gray", label="chance")
    axis.set_xlabel("optimizer step")
    axis.set_ylabel("mean training reward")
    axis.set_title(f"{ENV_ID}: tiny:random model, CPU")
    axis.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-seconds", type=float, default=600.0, help="Training time per method (<= 600).")
    parser.add_argument("--warmup-steps", type=int, default=150)
    parser.add_argument("--eval-episodes", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="grpo,ttopd")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup-correct", type=float, default=0.3,
                        help="Fraction of hint-less warm-up answers that are right (the rest are random).")
    parser.add_argument("--max-completion-length", type=int, default=40)
    options = parser.parse_args()
    torch.manual_seed(options.seed)
    agentgym.register(id=ENV_ID, entry_point=make_env)

    model, tokenizer = build_tiny_model(options.seed)
    add_response_schema(tokenizer)
    warm = warm_up(model, tokenizer, options.warmup_steps, options.seed, options.warmup_correct)
    before = evaluate(model, tokenizer, options.eval_episodes, options.seed + 1)
    warm_state = copy.deepcopy(model.state_dict())

    report: dict[str, Any] = {"bench": "learn", "env": ENV_ID, "model": "tiny:random",
                              "parameters": sum(p.numel() for p in model.parameters()),
                              "torch_threads": torch.get_num_threads(), "warmup": warm, "before": before,
                              "target": "after.ci95[0] > before.ci95[1] for each method, within "
                                        f"{options.budget_seconds:.0f} s of training"}
    curves = {}
    for method in options.methods.split(","):
        model.load_state_dict(warm_state)
        result = train(method, model, tokenizer, options.budget_seconds, options.seed,
                       Path("/tmp") / f"agentgym-bench-learn-{method}", options.learning_rate,
                       options.max_completion_length)
        result["after"] = evaluate(model, tokenizer, options.eval_episodes, options.seed + 1)
        result["ok"] = result["after"]["ci95"][0] > before["ci95"][1]
        curves[method] = result.pop("curve")
        result["train_reward_first10_last10"] = [round(sum(curves[method][:10]) / max(1, len(curves[method][:10])), 4),
                                                 round(sum(curves[method][-10:]) / max(1, len(curves[method][-10:])), 4)]
        report[method] = result
    png = RESULTS / "learn_curves.png"
    plot(curves, png)
    report["curves_png"] = str(png.relative_to(RESULTS.parent.parent))
    report["ok"] = all(report[method]["ok"] for method in curves)
    (RESULTS / "learn.json").write_text(json.dumps({**report, "curves": curves}, indent=1))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
