"""The viewer's one HTML page: the shell, its bundled script and style, the plots section, and the static
report (the same page with every run's data embedded).

Safety: the script builds every element from data with `textContent` and never with `innerHTML`; the only
markup inserted is the server's own SVG (every label escaped). A Content-Security-Policy lets only the page's
own nonce'd script run, so even a string that slipped through could not execute. Data embedded in the static
report escapes `<`, `>`, `&` and the JavaScript line separators, so it cannot close its `<script>` element.
"""

from __future__ import annotations

import json
import math
import secrets
from html import escape
from importlib import resources
from typing import Any

from agentgym.rewards import BREAKDOWN_PREFIXES, BREAKDOWN_TERMS, explain_term
from agentgym.viewer import stats, svg
from agentgym.viewer.gold import GoldLookup
from agentgym.viewer.runs import Run


def explain(term: str) -> str:
    """A one-line explanation of a reward-breakdown term, or a plain statement that the env did not document
    it (the page's script says the same, from the tables sent with the page)."""
    return explain_term(term) or "reported by the env (no description known to the viewer)"


def _pct_labels(edges: list[float]) -> list[str]:
    return [f"{edges[index]:.2g}–{edges[index + 1]:.2g}" for index in range(len(edges) - 1)]


def plots_html(run: Run) -> str:
    """The plots section of one run, as trusted markup (server-drawn SVG, every label escaped)."""
    parts: list[str] = []
    if run.rows:
        overall = stats.group_stats(run.rows)
        families = stats.by_family(run.rows)
        success, reward = overall["success"], overall["reward"]

        def interval(item: dict[str, Any], percent: bool) -> str:
            if item["value"] is None:
                return "-"
            def shown(value: float) -> str:
                return f"{value:.1%}" if percent else f"{value:.3f}"

            if item["low"] is None:
                return shown(item["value"])
            return f"{shown(item['value'])} [{shown(item['low'])}, {shown(item['high'])}]"

        parts.append(f'<p class="overall">{overall["tasks"]} tasks, {overall["episodes"]} episodes. Success '
                     f'{escape(interval(success, True))}, mean reward {escape(interval(reward, False))} '
                     f'(95% bootstrap intervals over tasks).</p>')
        parts.append(svg.interval_bars("Success per family (95% interval over tasks)", families, "success"))
        high = max([1.0, *[group["reward"]["high"] or 0.0 for group in families.values()]])
        low = min([0.0, *[group["reward"]["low"] or 0.0 for group in families.values()]])
        parts.append(svg.interval_bars("Mean reward per family (95% interval over tasks)", families, "reward",
                                       low=low, high=high, percent=False))
        distribution = stats.histogram([row["reward"] for row in run.rows])
        parts.append(svg.histogram("Reward distribution (episodes)", _pct_labels(distribution["edges"]),
                                   distribution["counts"], x_label="reward"))
        curve = stats.pass_at_k_curve(run.rows)
        parts.append(svg.lines(f"pass@k ({curve.get('tasks', 0)} tasks, {curve.get('samples_per_task', 0)} "
                               "samples each)", {"pass@k": list(zip(curve["ks"], curve["values"]))},
                               x_label="k", y_label="pass@k", y_range=(0.0, 1.0), percent=True))
        by_turns = stats.pass_at_k_turns(run.rows)
        parts.append(svg.lines("PASS@(k,T): solved within T turns",
                               {f"k={k}": list(zip(by_turns["turns"], values))
                                for k, values in by_turns["curves"].items()},
                               x_label="turn limit T", y_label="PASS@(k,T)", y_range=(0.0, 1.0), percent=True))
        turns = stats.integer_histogram([row["turns"] for row in run.rows])
        parts.append(svg.histogram("Turns per episode", [str(value) for value in turns["values"]], turns["counts"],
                                   x_label="turns"))
        parts.append(svg.interval_bars("Tool-error rate per family (errors / calls)", families, "tool_error_rate"))
    if run.metrics:
        series = stats.training_series(run.metrics)
        for name, values in series.items():
            parts.append(svg.lines(f"training: {name}", {name: values}, x_label="step", y_label=name))
    if not parts:
        parts.append("<p>This run holds no episodes and no training metrics yet.</p>")
    return "".join(parts)


def plots_document(run: Run) -> str:
    """The plots of one run as a page of their own (served into a script-less sandboxed frame)."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>plots of {escape(run.label)}'
            f'</title><style>body {{ font-family: system-ui, sans-serif; margin: 4px; }}</style></head><body>'
            f'{plots_html(run)}</body></html>')


def _asset(name: str) -> str:
    return resources.files("agentgym.viewer").joinpath(name).read_text(encoding="utf-8")


def run_meta(runs: list[Run]) -> list[dict[str, Any]]:
    """What the page knows of each run before loading episodes: label, kind, path and settings."""
    return [{"label": run.label, "kind": run.kind, "path": str(run.path), "episodes": len(run.rows),
             "agent": str(run.settings.get("agent", "")), "skipped_lines": run.skipped_lines,
             "settings": {key: run.settings[key] for key in ("agent", "envs", "seed", "n", "k", "samples",
                                                             "max_turns", "success_threshold", "env_args")
                          if key in run.settings}} for run in runs]


COLUMNS = ("env", "task", "family", "difficulty", "split", "sample", "success", "reward", "turns", "tool_calls",
           "tool_errors", "diagnosis", "error", "answer_score")


def rows_payload(runs: list[Run]) -> dict[str, Any]:
    """Every run's episode index, as column names plus one array per episode (compact for 10,000 rows)."""
    return {"columns": list(COLUMNS), "runs": [[[row[name] for name in COLUMNS] for row in run.rows]
                                               for run in runs]}


def safe_json(data: Any) -> str:
    """JSON that can sit inside a <script> element: no `<`, `>` or `&`, no JS line separators."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def page(runs: list[Run], *, static_data: dict[str, Any] | None = None, nonce: str | None = None) -> str:
    """The HTML page over `runs`. Served: it fetches rows and episodes from the server's /api. Static
    (`static_data` given): it carries them, and works from a file with no server."""
    nonce = nonce or secrets.token_urlsafe(16)
    connect = "'self'" if static_data is None else "'none'"
    policy = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src data:; "
              f"connect-src {connect}; frame-src {connect}; base-uri 'none'; form-action 'none'")
    if static_data is not None:
        plots = "".join(f'<section class="plots" data-run="{index}" hidden><h3>{escape(run.label)}</h3>'
                        f'{plots_html(run)}</section>' for index, run in enumerate(runs))
    else:  # drawn when first shown, in a frame that may not run script (a big run's plots take a while)
        plots = "".join(f'<section class="plots" data-run="{index}" hidden><h3>{escape(run.label)}</h3>'
                        f'<iframe class="plots-frame" sandbox="" title="plots of {escape(run.label)}" '
                        f'data-src="api/plots?run={index}"></iframe></section>' for index, run in enumerate(runs))
    boot = {"mode": "static" if static_data is not None else "server", "runs": run_meta(runs),
            "terms": BREAKDOWN_TERMS, "prefixes": BREAKDOWN_PREFIXES}
    data = f'<script type="application/json" id="boot">{safe_json(boot)}</script>'
    if static_data is not None:
        data += f'<script type="application/json" id="data">{safe_json(static_data)}</script>'
    title = "agentgym view: " + ", ".join(run.label for run in runs)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(policy)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{_asset("viewer.css")}</style></head>
<body>
<header><h1>{escape(title)}</h1>
<nav><button data-view="episodes" class="active">Episodes</button><button data-view="plots">Plots</button>
<button data-view="compare">Compare runs</button></nav></header>
<main>
<section id="view-episodes">
<div id="filters"></div>
<p id="count"></p>
<table id="episodes"><thead></thead><tbody></tbody></table>
<div id="pager"></div>
<div id="episode"></div>
</section>
<section id="view-plots" hidden><div id="plot-runs"></div>{plots}</section>
<section id="view-compare" hidden><div id="compare-controls"></div><div id="compare"></div></section>
</main>
{data}
<script nonce="{nonce}">{_asset("viewer.js")}</script>
</body></html>
"""


def finite(data: Any) -> Any:
    """`data` with every NaN or infinity replaced by None, so it is valid JSON."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {str(key): finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(value) for value in data]
    return data


_SHARED_LOOKUP = GoldLookup()


def episode_payload(run: Run, index: int, gold: GoldLookup | None = None) -> dict[str, Any]:
    """One episode as the page shows it: its record, its table row, and the gold answer and solution looked
    up in the env's task set (`gold`, default a process-wide lookup; see `agentgym.viewer.gold`).

    The payload's `gold` holds the gold fields found (empty when none), `gold_source` where they came from,
    and `gold_missing` why there are none.

    Raises:
        IndexError: no such episode.
    """
    record = run.episode(index)
    found = (gold or _SHARED_LOOKUP).gold(run, record)
    payload: dict[str, Any] = finite({"record": record, "gold": found["fields"],
                                      "gold_source": found.get("source"), "gold_missing": found.get("missing"),
                                      "row": run.rows[index]})
    return payload


def static_report(runs: list[Run]) -> str:
    """One self-contained HTML file over `runs`: every episode embedded (gold included where the env's task set
    is here), no server, no network."""
    lookup = GoldLookup()
    episodes = [[episode_payload(run, index, lookup) for index in range(len(run.rows))] for run in runs]
    return page(runs, static_data={**rows_payload(runs), "episodes": episodes})
