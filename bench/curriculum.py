"""Do curricula keep GRPO groups informative? Samplers compared on the learning bench's task, at equal rollouts.

    python bench/curriculum.py                 # the full run
    python bench/curriculum.py --quick         # a few minutes: same code path, small numbers

Same setup as bench/learn.py, imported from it: `LearnFhirCoding-v0` (FHIR-v0's `condition_coding` family,
three tools, two calls before `submit`), the tiny model warmed up on the oracle's episodes of the TRAIN split,
the same budget, the same test evaluation (every test task, `--samples` rollouts at temperature 1, 95% interval
from a bootstrap over tasks). From that one checkpoint, each arm trains GRPO (shipped defaults, 8 rollouts of
one task per step) for `--steps` steps through `agentgym_baselines.training.build_trainer` with
`RunSettings.curriculum` set, which is what `agentgym train grpo --curriculum NAME` runs:

- `uniform`: `agentgym.curriculum`'s uniform sampler (shuffled passes over the train tasks);
- `mixed-outcome`: prefers tasks whose recent pass rate makes a group likely to hold a success and a failure;
- `failure-focused+adaptive`: the failure-focused sampler, and the training env made with feedback="adaptive".
  The test evaluation of every arm is without feedback, so test figures compare like with like. This task set
  has ONE family, and failure-focused reweights families, so its draws here are close to uniform's: what
  this arm measures is mostly adaptive feedback.

Reported per arm: the share of GRPO groups with mixed outcomes (a success and a failure; the others have zero
advantage and teach nothing), with a 95% Wilson interval over groups, the zero-advantage share, and test
success after training with its 95% interval. Equal rollouts: every arm runs the same steps x 8 rollouts.

Prints one JSON object (with "figures"), writes bench/results/curriculum.json.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import learn  # the shared setup: env, warm-up, evaluation, trainer construction

STEPS, QUICK_STEPS = 60, 4
RESULTS = learn.RESULTS
# arm name -> (agentgym.curriculum sampler, training env's feedback mode)
ARMS: dict[str, tuple[str, str]] = {
    "uniform": ("uniform", "none"),
    "mixed-outcome": ("mixed-outcome", "none"),
    "failure-focused+adaptive": ("failure-focused", "adaptive"),
}


def available_samplers() -> set[str]:
    """Names `agentgym.curriculum` offers (empty when the module is absent)."""
    try:
        from agentgym.curriculum import SAMPLERS
    except ImportError:
        return set()
    return set(SAMPLERS)


def group_shares(log_history: list[dict[str, Any]], groups_per_step: int) -> dict[str, Any]:
    """Mixed-outcome and zero-advantage shares of the run's groups, from the trainer's per-step metrics.

    `groups/mixed_outcome_share` (a group holds a success and a failure) when the trainer logs it; otherwise
    1 - TRL's `frac_reward_zero_std`, the same thing when rewards are 0 or 1 (named in `source`)."""
    entries = [entry for entry in log_history if "reward" in entry]
    if any("groups/mixed_outcome_share" in entry for entry in entries):
        mixed = [entry.get("groups/mixed_outcome_share") for entry in entries]
        zero = [entry.get("groups/zero_advantage_share", entry.get("frac_reward_zero_std")) for entry in entries]
        source = "groups/mixed_outcome_share"
    else:
        zero = [entry.get("frac_reward_zero_std") for entry in entries]
        mixed = [None if value is None else 1.0 - value for value in zero]
        source = "1 - frac_reward_zero_std"
    kept = [value for value in mixed if value is not None]
    # Each step is `groups_per_step` groups; a step's share times that is its count of mixed groups.
    groups = len(kept) * groups_per_step
    mixed_groups = round(sum(kept) * groups_per_step)
    low, high = learn.wilson(mixed_groups, groups)
    zero_kept = [value for value in zero if value is not None]
    return {"mixed_outcome_share": round(mixed_groups / groups, 4) if groups else None,
            "mixed_outcome_ci95_wilson": [round(low, 4), round(high, 4)], "groups": groups,
            "mixed_groups": mixed_groups,
            "zero_advantage_share": round(sum(zero_kept) / len(zero_kept), 4) if zero_kept else None,
            "source": source, "per_step": mixed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # The population and width this bench was measured with (README); bench/learn.py has since moved to more.
    learn.add_setup_arguments(parser, default_steps=STEPS, quick_steps=QUICK_STEPS, patients=400, width=64)
    parser.add_argument("--arms", default=",".join(ARMS), help=f"Comma-separated, from {', '.join(ARMS)}.")
    parser.add_argument("--out", type=Path, default=RESULTS / "curriculum.json")
    options = parser.parse_args(argv)
    arms = [arm.strip() for arm in options.arms.split(",") if arm.strip()]
    for arm in arms:
        if arm not in ARMS:
            raise SystemExit(f"--arms: unknown arm {arm!r}; choose from {', '.join(ARMS)}")
    offered = available_samplers()
    missing = sorted({ARMS[arm][0] for arm in arms} - offered)
    if missing:
        raise SystemExit(f"agentgym.curriculum does not offer {', '.join(missing)} (it offers: "
                         f"{', '.join(sorted(offered)) or 'nothing, the module is missing'}); pass --arms with "
                         "the ones it has, or update agentgym")
    setup = learn.prepare(options, default_steps=STEPS, quick_steps=QUICK_STEPS, name="curriculum")
    model, steps = setup.model, setup.steps
    learn.progress(f"evaluating the start checkpoint on {len(setup.test_rows)} test tasks x {setup.samples}")
    before_all = setup.evaluate()
    before = before_all["test"]
    report: dict[str, Any] = {**setup.describe("curriculum", argv), "before": before_all, "arms": {}}
    curves: dict[str, dict[str, list[float | None]]] = {}
    for arm in arms:
        sampler, feedback = ARMS[arm]
        model.load_state_dict(setup.start_state)
        overrides: dict[str, Any] = {"feedback": feedback} if feedback != "none" else {}
        trainer = learn.build("grpo", model, setup.tokenizer, steps, setup.seed, setup.work / arm,
                              budget=setup.budget, curriculum=sampler, **overrides)
        began = time.perf_counter()
        learn.progress(f"training GRPO with the {sampler} sampler, feedback={feedback}: {steps} steps")
        with contextlib.redirect_stdout(sys.stderr):  # TRL prints its logs; stdout carries the one JSON object
            trainer.train()
        seconds = round(time.perf_counter() - began, 1)
        curves[arm] = learn.curves_of(trainer.state.log_history)
        shares = group_shares(trainer.state.log_history,
                              trainer.args.generation_batch_size // trainer.args.num_generations)
        curves[arm]["mixed_outcome_share"] = shares.pop("per_step")
        logged = [entry for entry in trainer.state.log_history if "reward" in entry]
        sampler_stats = {key.split("/", 1)[1]: value for key, value in (logged[-1] if logged else {}).items()
                         if key.startswith("curriculum/")}
        training_feedback = trainer.environment_factories[None]._env_kwargs.get("feedback", "none")
        learn.progress(f"evaluating {arm}")
        after_all = setup.evaluate()
        report["arms"][arm] = {
            "sampler": sampler, "feedback": feedback, "steps": trainer.state.global_step, "train_seconds": seconds,
            "rollouts": trainer.state.global_step * trainer.args.generation_batch_size,
            "training_env_feedback": training_feedback, "sampler_stats_at_end": sampler_stats,
            "groups": shares, "after": after_all,
            "test_success_change": round(after_all["test"]["success"] - before["success"], 4),
            "fit_notes": getattr(trainer, "fit_notes", []),
        }
    out = learn.quick_path(options.out, RESULTS / "curriculum.json", setup.quick)
    report["figures"] = {
        "before_test_success": before["success"], "before_test_ci95": before["ci95"],
        **{f"{arm}_mixed_outcome_share": report["arms"][arm]["groups"]["mixed_outcome_share"] for arm in arms},
        **{f"{arm}_mixed_outcome_ci95": report["arms"][arm]["groups"]["mixed_outcome_ci95_wilson"] for arm in arms},
        **{f"{arm}_after_test_success": report["arms"][arm]["after"]["test"]["success"] for arm in arms},
        **{f"{arm}_after_test_ci95": report["arms"][arm]["after"]["test"]["ci95"] for arm in arms},
        "steps_per_arm": steps, "rollouts_per_arm": {arm: report["arms"][arm]["rollouts"] for arm in arms},
        "total_seconds": round(time.perf_counter() - setup.started, 1),
    }
    return setup.finish(report, curves, out)


if __name__ == "__main__":
    sys.exit(main())
