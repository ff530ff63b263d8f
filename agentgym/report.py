"""The Markdown report and PNG plots of an evaluation run (matplotlib's Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

PLOTS_DIR = "plots"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _interval(values: Sequence[float | None]) -> str:
    low, high = values
    return "" if low is None or high is None else f" [{low:.1%}, {high:.1%}]"


def _mean_reward(group: dict[str, Any]) -> str:
    mean = group.get("mean_reward")
    if mean is None:
        return "-"
    low, high = group.get("mean_reward_ci", [None, None])
    return f"{mean:.3f}" + ("" if low is None or high is None else f" [{low:.3f}, {high:.3f}]")


def _histogram_rows(groups: dict[str, dict[str, Any]], label: str) -> list[str]:
    """One row per group: the count of episodes whose reward fell in each tenth of [0, 1]."""
    first = next(iter(groups.values()), {})
    edges = first.get("reward_histogram", {}).get("edges")
    if not edges:
        return []
    bins = [f"[{low:.1f}, {high:.1f}{']' if index == len(edges) - 2 else ')'}"
            for index, (low, high) in enumerate(pairwise(edges))]
    lines = ["| " + " | ".join([label, *bins]) + " |", "|" + "---|" * (len(bins) + 1)]
    for name, group in groups.items():
        counts = group.get("reward_histogram", {}).get("counts", [])
        lines.append("| " + " | ".join([name, *[str(count) for count in counts]]) + " |")
    return lines


def counted(number: Any, noun: str) -> str:
    """`number` and `noun`, plural unless the number is 1: "1 sample", "3 samples"."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _splits(run: dict[str, Any]) -> str:
    """The split each env ran, e.g. "test" or "test (SQL-v0), all (Toy-v0)"; "auto" says it was the default."""
    used = run.get("splits") or {}
    names = set(used.values())
    text = next(iter(names)) if len(names) == 1 else ", ".join(f"{name} ({env})" for env, name in used.items())
    if not text:
        text = str(run.get("split") or "all")
    return text + (" (the default: the test split where an env has one)" if run.get("split") == "auto" else "")


def _table(groups: dict[str, dict[str, Any]], ks: list[str], label: str) -> list[str]:
    # pass^1 is pass@1 (and the success rate): shown from k = 2 on.
    consistent = [k for k in ks if k != "1"]
    header = [label, "tasks", "episodes", "success (95% CI)", "mean reward (95% CI)", *[f"pass@{k}" for k in ks],
              *[f"pass^{k}" for k in consistent], "mean turns", "tool-error rate"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, group in groups.items():
        turns = "-" if group["mean_turns"] is None else f"{group['mean_turns']:.2f}"
        every = group.get("pass_hat_k", {})  # absent from summaries written before pass^k
        cells = [name, str(group["tasks"]), str(group["episodes"]),
                 _percent(group["success_rate"]) + _interval(group["success_rate_ci"]), _mean_reward(group),
                 *[_percent(group["pass_at_k"].get(k)) for k in ks], *[_percent(every.get(k)) for k in consistent],
                 turns, _percent(group["tool_error_rate"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _label_table(groups: dict[str, dict[str, Any]], part: str, label: str, unit: str) -> list[str]:
    """One row per group, one column per diagnosis label of `part` ("episodes", "turns" or "domain"): how many
    `unit` had it, and their share of the group's total for episode and turn labels."""
    totals: dict[str, int] = {}
    for group in groups.values():
        for name, count in group.get("diagnosis", {}).get(part, {}).items():
            totals[name] = totals.get(name, 0) + count
    if not totals:
        return []
    columns = sorted(totals, key=lambda name: (-totals[name], name))
    lines = ["| " + " | ".join([label, unit, *[f"`{name}`" for name in columns]]) + " |",
             "|" + "---|" * (len(columns) + 2)]
    for name, group in groups.items():
        diagnosis = group.get("diagnosis", {})
        counts = diagnosis.get(part, {})
        whole = sum(counts.values()) if part != "domain" else diagnosis.get("diagnosed", 0)
        cells = [str(counts.get(column, 0)) + (f" ({counts[column] / whole:.0%})" if counts.get(column) and whole
                                               else "") for column in columns]
        lines.append("| " + " | ".join([name, str(whole), *cells]) + " |")
    return lines


def diagnosis_section(summary: dict[str, Any]) -> list[str]:
    """The report's "Failure diagnosis" section: episode, turn and domain labels (docs/diagnosis.md) by env and
    by family; empty when no episode carries a diagnosis."""
    overall = summary.get("diagnosis", {})
    if not overall.get("diagnosed"):
        return []
    groups = {"all": summary, **summary.get("by_env", {})}
    families = summary.get("by_family", {})
    lines = ["## Failure diagnosis", "",
             "Labels computed by each env from what it saw (docs/diagnosis.md): one per episode, one per turn, and "
             "the domain's own labels (an episode counts once per domain label it shows)."
             + (f" {overall['undiagnosed']} episodes carry no diagnosis (the agent's side ended them, or the env "
                "gives none)." if overall.get("undiagnosed") else ""), ""]
    for title, part, unit in (("Episode labels", "episodes", "episodes"), ("Turn labels", "turns", "turns"),
                              ("Domain labels", "domain", "episodes")):
        rows = _label_table(groups, part, "group", unit)
        if not rows:
            continue
        lines += [f"### {title} by env", "", *rows, ""]
        lines += [f"### {title} by family", "", *_label_table(families, part, "family", unit), ""]
    return lines


def write_plots(out: Path, summary: dict[str, Any], records: Sequence[dict[str, Any]]) -> list[Path]:
    """Success by family and by difficulty, PASS@(k,T) curves and a turns histogram; returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = out / PLOTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def bars(groups: dict[str, dict[str, Any]], title: str, name: str) -> None:
        labels = list(groups)
        values = [groups[label]["success_rate"] or 0.0 for label in labels]
        errors = [[max(0.0, value - (groups[label]["success_rate_ci"][0] or value)) for label, value in
                   zip(labels, values)],
                  [max(0.0, (groups[label]["success_rate_ci"][1] or value) - value) for label, value in
                   zip(labels, values)]]
        figure, axes = plt.subplots(figsize=(max(4.0, 0.8 * len(labels) + 2), 3.5))
        axes.bar(labels, values, yerr=errors, capsize=3, color="#4c72b0")
        axes.set_ylim(0, 1.05)
        axes.set_ylabel("success rate")
        axes.set_title(title)
        axes.tick_params(axis="x", rotation=30)
        figure.tight_layout()
        path = directory / name
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written.append(path)

    bars(summary["by_family"], "success by family (95% bootstrap CI)", "success_by_family.png")
    bars(summary["by_difficulty"], "success by difficulty (95% bootstrap CI)", "success_by_difficulty.png")

    histogram = summary.get("reward_histogram")
    if histogram:
        figure, axes = plt.subplots(figsize=(5, 3.5))
        edges = histogram["edges"]
        axes.bar(edges[:-1], histogram["counts"], width=0.095, align="edge", color="#8172b2")
        axes.set_xlabel("reward")
        axes.set_ylabel("episodes")
        axes.set_title("reward distribution")
        figure.tight_layout()
        path = directory / "reward_histogram.png"
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written.append(path)

    curves = summary.get("pass_at_k_turns", {})
    figure, axes = plt.subplots(figsize=(5, 3.5))
    for k, values in curves.items():
        if k == "turns":
            continue
        axes.plot(curves["turns"], [v if v is not None else float("nan") for v in values], marker=".",
                  label=f"k={k}")
    axes.set_xlabel("turn budget T")
    axes.set_ylabel("PASS@(k,T)")
    axes.set_ylim(0, 1.05)
    axes.set_title("success within k samples and T turns")
    if len(curves) > 1:
        axes.legend()
    figure.tight_layout()
    path = directory / "pass_at_k_turns.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    written.append(path)

    figure, axes = plt.subplots(figsize=(5, 3.5))
    turns = [int(record["turns"]) for record in records]
    if turns:
        axes.hist(turns, bins=range(min(turns), max(turns) + 2), align="left", color="#55a868")
    axes.set_xlabel("turns")
    axes.set_ylabel("episodes")
    axes.set_title("turns per episode")
    figure.tight_layout()
    path = directory / "turns_histogram.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    written.append(path)
    return written


def write_report(out: Path, summary: dict[str, Any], records: Sequence[dict[str, Any]], *,
                 plots: bool = True) -> Path:
    """Write `out/report.md` (and, unless `plots` is false, `out/plots/*.png`); returns the report's path."""
    run = summary["run"]
    ks = list(summary["pass_at_k"])
    perturbation = run.get("env_args", {}).get("perturb")
    lines = [
        f"# Evaluation: {run['agent']} on {', '.join(run['envs'])}",
        "",
        f"{counted(summary['episodes'], 'episode')} over {counted(summary['tasks'], 'task')} of split {_splits(run)} "
        f"({counted(run['samples'], 'sample')} per task, seed {run['seed']}, backend {run['backend']}, "
        f"{counted(run['workers'], 'worker')})."
        + (f" Perturbed: {', '.join(perturbation)} (perturbation seed {run['env_args'].get('perturb_seed', 0)})."
           if perturbation else "")
        + ("" if summary["complete"] else f" **Incomplete: {counted(summary['missing_episodes'], 'episode')} missing; "
                                          "re-run the same command to finish.**"),
        "",
        ("Success counts an episode that submitted and scored at least "
         f"{run['success_threshold']}; it is the verifier's score alone. Mean reward is what the env paid "
         "(partial credit and shaping included). pass@k is the unbiased estimator of Chen et al. (2021) "
         "(at least one of k samples succeeds); pass^k the unbiased C(c,k)/C(n,k) (all k samples succeed: "
         "consistency); intervals are 95% percentile bootstraps over tasks."),
        "",
        "## Overall",
        "",
        *_table({"all": summary}, ks, "group"),
        "",
        "## By env",
        "",
        *_table(summary["by_env"], ks, "env"),
        "",
        "## By family",
        "",
        *_table(summary["by_family"], ks, "family"),
        "",
        "## By difficulty",
        "",
        *_table(summary["by_difficulty"], ks, "difficulty"),
        "",
        "## Reward distribution (episodes per reward bin)",
        "",
        *_histogram_rows({"all": summary, **summary["by_family"]}, "group"),
        "",
        *diagnosis_section(summary),
    ]
    curves = summary.get("pass_at_k_turns", {})
    if curves.get("turns"):
        lines += ["## PASS@(k,T): success within k samples and at most T turns", "",
                  "| k | " + " | ".join(f"T={t}" for t in curves["turns"]) + " |",
                  "|---|" + "---|" * len(curves["turns"])]
        for k in ks:
            lines.append(f"| {k} | " + " | ".join(_percent(value) for value in curves[k]) + " |")
        lines.append("")
    if plots:
        written = write_plots(out, summary, records)
        lines += ["## Plots", ""] + [f"![{path.stem}]({PLOTS_DIR}/{path.name})" for path in written] + [""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def write_perturbation_report(out: Path, clean: dict[str, Any], perturbed: dict[str, dict[str, Any]]) -> Path:
    """Write `out/report.md` for `agentgym eval --perturb`: the clean run against each perturbed run (one per
    perturbation kind, and all kinds together), overall and per family; returns the report's path.

    `clean` is the clean run's summary; `perturbed` maps a kind (or "a+b" for all together) to
    {"success_rate", "mean_reward", "by_family": {family: {"success_rate", "mean_reward"}}}."""
    from agentgym.wrappers import PERTURBATIONS

    def reward(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    def change(now: float | None, before: float | None) -> str:
        return "-" if now is None or before is None else f"{now - before:+.1%}"

    run = clean["run"]
    lines = [f"# Robustness: {run['agent']} on {', '.join(run['envs'])}, clean against perturbed", "",
             ("Each perturbed run plays the same tasks with the same seeds as the clean run; only the env's text "
              "or transitions change (the task and its verifier never do). See `clean/report.md` and "
              "`perturbed*/report.md` for the full reports."), "",
             "| run | acts on | success | change | mean reward |", "|---|---|---|---|---|",
             f"| clean | - | {_percent(clean['success_rate'])} | - | {reward(clean['mean_reward'])} |"]
    for kind, row in perturbed.items():
        meaning = "; ".join(str(PERTURBATIONS.get(part, "")) for part in kind.split("+"))
        lines.append(f"| {kind} | {meaning} | {_percent(row['success_rate'])} | "
                     f"{change(row['success_rate'], clean['success_rate'])} | {reward(row['mean_reward'])} |")
    lines += ["", "## Success by family", "",
              "| family | clean | " + " | ".join(perturbed) + " |", "|---|---|" + "---|" * len(perturbed)]
    for family, group in clean["by_family"].items():
        cells = [_percent(row["by_family"].get(family, {}).get("success_rate")) for row in perturbed.values()]
        lines.append(f"| {family} | {_percent(group['success_rate'])} | " + " | ".join(cells) + " |")
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
