"""Hard tier: who works under a manager, at any depth of the reporting tree, among people still employed.

The work: a recursive walk down `employees.manager_id`; the manager is named with their department because some
names are shared; people with a termination date have left (a team under someone who left still counts
through them). The decoys count direct reports only, count people who left, or take every person of that name.
"""

from __future__ import annotations

from .base import Context, Draft
from .erp import KIND, PER_DATABASE

FAMILY = "org_chart"
__all__ = ["FAMILY", "KIND", "PER_DATABASE", "generate"]


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    managers = ctx.run(
        "SELECT e.full_name, d.department_name FROM employees AS e JOIN departments AS d ON d.department_id = "
        "e.department_id WHERE EXISTS (SELECT 1 FROM employees AS m JOIN employees AS s ON s.manager_id = "
        "m.employee_id WHERE m.manager_id = e.employee_id) ORDER BY e.employee_id")
    twins = [row for row in ctx.run(
        "SELECT e.full_name, d.department_name FROM employees AS e JOIN departments AS d ON d.department_id = "
        "e.department_id WHERE EXISTS (SELECT 1 FROM employees AS m WHERE m.manager_id = e.employee_id) AND "
        "(SELECT COUNT(*) FROM employees AS o WHERE o.full_name = e.full_name) > 1 ORDER BY e.employee_id")]
    for _ in range(count):
        name, department = rng.choice(twins if twins and rng.random() < 0.4 else managers)
        boss = (f"(SELECT e.employee_id FROM employees AS e JOIN departments AS d ON d.department_id = e.department_id "
                f"WHERE e.full_name = '{name}' AND d.department_name = '{department}')")
        everyone_named = f"(SELECT employee_id FROM employees WHERE full_name = '{name}')"
        measure, what = rng.choice((("COUNT(*)", "How many people"), ("SUM(e.salary)", "total salary")))

        def team(root: str, *, recursive: bool = True, active: bool = True, measure: str = measure) -> str:
            below = (" UNION ALL SELECT e.employee_id FROM employees AS e JOIN team AS t ON e.manager_id = "
                     "t.employee_id" if recursive else "")
            return (f"WITH RECURSIVE team(employee_id) AS (SELECT employee_id FROM employees WHERE manager_id IN "
                    f"{root}{below}) SELECT COALESCE({measure}, 0) FROM team JOIN employees AS e ON e.employee_id = "
                    f"team.employee_id" + (" WHERE e.terminated_on IS NULL" if active else ""))

        gold = team(boss)
        if what == "How many people":
            question = rng.choice((
                (f"How many people still working at the company report to {name} of the {department} department, "
                 "directly or through any chain of managers?"),
                (f"Count the current employees in the whole reporting line under {name} ({department} department): "
                 "direct reports, their reports, and so on down."),
            ))
        else:
            question = rng.choice((
                (f"What is the total salary of the people still working at the company who report to {name} of the "
                 f"{department} department, directly or through any chain of managers?"),
                (f"Add up the salaries of everyone currently employed anywhere below {name} ({department} "
                 "department) in the reporting tree."),
            ))
        notes = (("Someone with a termination date has left the company and does not count, but the people under "
                 "them still count through them. Do not count the manager themself. Answer with one number."),)
        shared = ctx.run(f"SELECT COUNT(*) FROM employees WHERE full_name = '{name}'")[0][0] > 1
        traps = (team(boss, recursive=False), team(boss, active=False)) + ((team(everyone_named),) if shared else ())
        drafts.append(Draft(FAMILY, question, gold, difficulty="challenging", answer_mode=True, single=True,
                            notes=notes, traps=traps))
    return drafts
