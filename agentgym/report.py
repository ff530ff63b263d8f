"""The Markdown report and PNG plots of an evaluation run (matplotlib's Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

PLOTS_DIR = "plots"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _interval(values: Sequence[float | None]) -> str:
    low, high = values
    return "" if low is None or high is None else f" [{low:.1%}, {high:.1%}]"


def _table(groups: dict[str, dict[str, Any]], ks: list[str], label: str) -> list[str]:
    header = [label, "tasks", "episodes", "success (95% CI)", *[f"pass@{k}" for k in ks], "mean turns",
              "tool-error rate"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, group in groups.items():
        turns = "-" if group["mean_turns"] is None else f"{group['mean_turns']:.2f}"
        cells = [name, str(group["tasks"]), str(group["episodes"]),
                 _percent(group["success_rate"]) + _interval(group["success_rate_ci"]),
                 *[_percent(group["pass_at_k"].get(k)) for k in ks], turns, _percent(group["tool_error_rate"])]
        lines.append("| " + " | ".join(cells) + " |")
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
    lines = [
        f"# Evaluation: {run['agent']} on {', '.join(run['envs'])}",
        "",
        f"{summary['episodes']} episodes over {summary['tasks']} tasks ({run['samples']} samples per task, "
        f"seed {run['seed']}, backend {run['backend']}, {run['workers']} workers)."
        + ("" if summary["complete"] else f" **Incomplete: {summary['missing_episodes']} episodes missing; "
                                          "re-run the same command to finish.**"),
        "",
        ("Success counts an episode that submitted and scored at least "
         f"{run['success_threshold']}. pass@k is the unbiased estimator of Chen et al. (2021); intervals are "
         "95% percentile bootstraps over tasks."),
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
