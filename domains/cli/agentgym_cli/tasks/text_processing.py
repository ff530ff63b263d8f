"""Text processing on logs and CSV files: counting, extracting, summing, ranking."""

from __future__ import annotations

import random
from collections import Counter

from agentgym_cli.data.fixtures import Fixture
from agentgym_cli.tasks.base import TaskSpec, quote_lines, shell

FAMILY = "text_processing"


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Three text-processing tasks on `fixture`."""
    access = [line.split() for line in fixture.text("logs/access.log").splitlines()]
    app = [line.split() for line in fixture.text("logs/app.log").splitlines()]
    sales = [line.split(",") for line in fixture.text("data/sales.csv").splitlines()[1:]]
    made: list[TaskSpec] = []
    options = ["status", "ips", "region_sum", "errors", "top_component", "product_quantity"]
    for template in rng.sample(options, 4):
        if len(made) == 3:
            break
        if template == "status":
            status = rng.choice(sorted({row[8] for row in access}))
            made.append(TaskSpec(FAMILY, template, f"How many requests in `logs/access.log` got the HTTP status "
                                 f"{status}?", [shell(f"awk '$9 == {status}' logs/access.log | wc -l")],
                                 answer_kind="number", expected_answer=sum(row[8] == status for row in access),
                                 check_state=False, difficulty="easy"))
        elif template == "ips":
            distinct = {row[0] for row in access}
            as_text = sorted(distinct)
            as_numbers = sorted(distinct, key=lambda ip: tuple(int(part) for part in ip.split(".")))
            # Either ascending order a reader may mean by "sorted" passes; any other order (or a repeat) fails.
            script = ("lines=$(sed -e 's/[[:space:]]*$//' -e '/^$/d' ips.txt) || exit 1\n"
                      f"[ \"$lines\" = \"$({quote_lines(as_text)})\" ] || "
                      f"[ \"$lines\" = \"$({quote_lines(as_numbers)})\" ] || "
                      "{ echo 'ips.txt is not the distinct IPs in ascending order'; exit 1; }\n")
            made.append(TaskSpec(FAMILY, template, "Write the distinct client IP addresses found in "
                                 "`logs/access.log` to a new file `ips.txt` in the workspace root, one per line, "
                                 "in ascending order: as `sort` orders text, or numerically by the four numbers of "
                                 "each address (either is accepted).",
                                 [shell("awk '{print $1}' logs/access.log | sort -u > ips.txt")],
                                 ignore=["ips.txt"], tests=[{"name": "ips.txt holds the distinct IPs, sorted",
                                                             "script": script}]))
        elif template == "region_sum":
            region = rng.choice(sorted({row[2] for row in sales}))
            month = rng.choice(sorted({row[1][:7] for row in sales}))
            made.append(TaskSpec(FAMILY, template, f"What is the total `quantity` of the sales in the region "
                                 f"`{region}` dated in the month {month} (column `date`) in `data/sales.csv`?",
                                 [shell(f"awk -F, 'NR > 1 && $3 == \"{region}\" && substr($2, 1, 7) == \"{month}\" "
                                        "{s += $5} END {print s + 0}' data/sales.csv")], answer_kind="number",
                                 expected_answer=sum(int(row[4]) for row in sales
                                                     if row[2] == region and row[1][:7] == month),
                                 check_state=False))
        elif template == "errors":
            made.append(TaskSpec(FAMILY, template, "Copy every line of `logs/app.log` whose level is ERROR, in their "
                                 "original order and unchanged, into a new file `logs/errors.log`.",
                                 [shell("grep ' ERROR ' logs/app.log > logs/errors.log")], difficulty="easy"))
        elif template == "top_component":
            level = rng.choice(["WARN", "ERROR", "DEBUG"])
            counts = Counter(row[2].rstrip(":") for row in app if row[1] == level).most_common()
            if len(counts) < 1 or (len(counts) > 1 and counts[0][1] == counts[1][1]):
                continue  # a tie has no single answer
            made.append(TaskSpec(FAMILY, template, f"In `logs/app.log` (format: TIMESTAMP LEVEL COMPONENT: MESSAGE), "
                                 f"which component logged the most {level} lines? Answer with the component name.",
                                 [shell(f"awk '$2 == \"{level}\" {{print $3}}' logs/app.log | tr -d : | sort | "
                                        "uniq -c | sort -k1,1nr | head -1 | awk '{print $2}'")],
                                 answer_kind="text", expected_answer=counts[0][0], check_state=False,
                                 difficulty="medium"))
        else:
            product = rng.choice(sorted({row[3] for row in sales}))
            made.append(TaskSpec(FAMILY, template, f"How many units of `{product}` were sold in total according to "
                                 "`data/sales.csv` (column `quantity`)?",
                                 [shell(f"awk -F, '$4 == \"{product}\" {{s += $5}} END {{print s + 0}}' "
                                        "data/sales.csv")], answer_kind="number",
                                 expected_answer=sum(int(row[4]) for row in sales if row[3] == product),
                                 check_state=False))
    return made
