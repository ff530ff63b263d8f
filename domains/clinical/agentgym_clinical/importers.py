"""`agentgym tasks import medqa|pubmedqa|medmcqa FILE --out T.jsonl`: benchmark files to ClinicalQA-v0 tasks.

Each command takes the whole file and writes the tasks it could read; what it left out (a count and a reason
per kind, then the records) goes to stderr and, with every record, to a sidecar `T.import.json` beside the task
file. It also says the splits it kept and the benchmark's constant baselines (the most common answer's share,
and the best fixed letter in the file's own order), so that a reported accuracy can be read against them. Run the tasks with
`gym.make("ClinicalQA-v0", tasks="T.jsonl")` or `agentgym eval ClinicalQA-v0 --env-arg tasks=T.jsonl ...`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from agentgym import save_tasks

from .data.benchmarks import ImportReport, read_medmcqa, read_medqa, read_pubmedqa

_SHOWN_FAILURES = 20


def sidecar_path(out: Path) -> Path:
    """Where an import's report goes: beside the task file, `T.jsonl` -> `T.import.json`."""
    return out.with_name(out.stem + ".import.json")


def _finish(report: ImportReport, kind: str, out: Path) -> None:
    if not report.tasks:
        reasons = "; ".join(f"{item}: {reason}" for item, reason in report.failures[:3]) or "the file is empty"
        raise click.ClickException(f"no {kind} task could be imported ({reasons})")
    written = save_tasks(report.tasks, out)
    summary = report.summary()
    sidecar = sidecar_path(out)
    sidecar.write_text(json.dumps({**summary, "source": kind, "tasks_file": out.name,
                                   "left_out_records": [{"record": item, "reason": reason}
                                                        for item, reason in report.failures]}, indent=1) + "\n",
                       encoding="utf-8")
    click.echo(f"wrote {written} {kind} tasks to {out} (splits: {json.dumps(summary['splits'])})")
    for note in report.notes:
        click.echo(f"note: {note}")
    baseline = summary["constant_baseline"]
    line = (f"constant baseline: {baseline['most_common_answer']!r} is the answer of "
            f"{baseline['most_common_share']:.1%} of tasks; a fixed letter scores {baseline['shuffled_letter_chance']:.1%} "
            "with shuffled options")
    if "best_letter_share" in baseline:
        line += (f" ({baseline['best_letter_in_original_order']} scores {baseline['best_letter_share']:.1%} in the "
                 "file's own order)")
    click.echo(line)
    if report.failures:
        # What was left out goes to stderr (the count and reason of each kind, then the first records), and all
        # of it to the sidecar, so a pipeline reading stdout still sees it and nothing is lost past the first 20.
        click.echo(f"left out {len(report.failures)} of {len(report.failures) + written} records "
                   f"(all listed in {sidecar}):", err=True)
        for reason, count in summary["left_out_by_reason"].items():
            click.echo(f"  {count} x {reason}", err=True)
        for item, reason in report.failures[:_SHOWN_FAILURES]:
            click.echo(f"  {item}: {reason}", err=True)
        if len(report.failures) > _SHOWN_FAILURES:
            click.echo(f"  ... and {len(report.failures) - _SHOWN_FAILURES} more in {sidecar}", err=True)
    else:
        click.echo(f"report: {sidecar}")


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_OUT = click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
                    help="Task file to write (JSONL).")


@click.command("medqa")
@click.argument("source", type=_FILE)
@_OUT
@click.option("--name", default="medqa", show_default=True,
              help="Benchmark name: the tasks' family and id prefix (e.g. afrimedqa).")
@click.option("--split", default=None, help="Split of every task (default: from the file name, else 'test').")
def medqa_command(source: Path, out: Path, name: str, split: str | None) -> None:
    """Import MedQA-style JSON Lines: question, options (A-E), answer_idx.

    Example: agentgym tasks import medqa data/medqa/test.jsonl --out medqa_test.jsonl
    """
    _finish(read_medqa(source, name=name, split=split), name, out)


@click.command("pubmedqa")
@click.argument("source", type=_FILE)
@_OUT
@click.option("--test-split", type=_FILE, default=None,
              help="PubMedQA's test_ground_truth.json: its ids become split 'test', the others 'train'.")
def pubmedqa_command(source: Path, out: Path, test_split: Path | None) -> None:
    """Import PubMedQA's ori_pqal.json (QUESTION, CONTEXTS, final_decision by PubMed id).

    Example: agentgym tasks import pubmedqa data/ori_pqal.json --test-split data/test_ground_truth.json --out pqa.jsonl
    """
    try:
        report = read_pubmedqa(source, test_split=test_split)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    _finish(report, "pubmedqa", out)


@click.command("medmcqa")
@click.argument("source", type=_FILE)
@_OUT
@click.option("--cop-base", type=click.Choice(["0", "1"]), default=None,
              help="Whether cop counts options from 0 or 1 (default: read from the file; the published files use 1).")
@click.option("--split", default=None, help="Split of every task (default: from the file name, else 'test').")
def medmcqa_command(source: Path, out: Path, cop_base: str | None, split: str | None) -> None:
    """Import MedMCQA JSON lines: question, opa..opd, cop.

    Example: agentgym tasks import medmcqa medmcqa/dev.json --out medmcqa_dev.jsonl
    """
    _finish(read_medmcqa(source, cop_base=None if cop_base is None else int(cop_base), split=split), "medmcqa", out)
