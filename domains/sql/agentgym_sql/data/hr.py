"""Human resources: locations, departments, employees (with managers), projects, assignments (~5,000 rows)."""

from __future__ import annotations

import random

from .schema import Column, DatabaseSpec, Rows, Table, key, ref
from .vocab import CITIES, day, maybe, messy, person_name

DEPARTMENTS = ("Engineering", "Finance", "Legal", "Marketing", "Operations", "People", "Research", "Sales",
               "Security", "Support")
TITLES = ("analyst", "engineer", "senior engineer", "manager", "director", "specialist", "coordinator")

TABLES = (
    Table("locations", "office", "offices", (
        key("location_id"),
        Column("city", "text", role="label", phrase="city"),
        Column("region", "text", role="category"),
    )),
    Table("departments", "department", "departments", (
        key("department_id"),
        Column("department_name", "text", role="label", phrase="name"),
        ref("location_id", "locations.location_id"),
        Column("budget", "money", role="measure"),
    )),
    Table("employees", "employee", "employees", (
        key("employee_id"),
        Column("full_name", "text", role="label", phrase="name", messy=True),
        ref("department_id", "departments.department_id"),
        ref("manager_id", "employees.employee_id", nullable=True, phrase="manager"),
        Column("job_title", "text", role="category", phrase="job title", messy=True),
        Column("hire_date", "date", role="date", phrase="hire date"),
        Column("salary", "money", role="measure"),
        Column("bonus", "money", role="measure", nullable=True),
    )),
    Table("projects", "project", "projects", (
        key("project_id"),
        Column("project_name", "text", role="label", phrase="name"),
        ref("department_id", "departments.department_id"),
        Column("started_on", "date", role="date", phrase="start date"),
        Column("ended_on", "date", role="date", phrase="end date", nullable=True),
        Column("priority", "text", role="category"),
    )),
    Table("assignments", "assignment", "assignments", (
        key("assignment_id"),
        ref("employee_id", "employees.employee_id"),
        ref("project_id", "projects.project_id"),
        Column("project_role", "text", role="category", phrase="role on the project"),
        Column("weekly_hours", "integer", role="measure", phrase="weekly hours"),
    )),
)


def build_rows(rng: random.Random, scale: int) -> Rows:
    locations = [(i, city, "Americas" if city in ("Austin", "Boston", "Chicago", "Denver", "Seattle", "Toronto")
                  else "EMEA" if city not in ("Osaka",) else "APAC") for i, city in enumerate(CITIES[:8], 1)]
    departments = [(i, name, rng.randint(1, len(locations)), float(rng.randint(5, 40) * 50000))
                   for i, name in enumerate(DEPARTMENTS, 1)]
    employees = []
    for i in range(1, 1501):
        manager = None if i <= 10 else rng.randint(1, min(i - 1, 150))
        title = "director" if i <= 10 else rng.choice(TITLES)
        salary = float(rng.choice((45000, 55000, 65000, 80000, 95000, 120000)) + 2500 * rng.randint(0, 8))
        employees.append((i, messy(rng, person_name(rng), 0.1), rng.randint(1, len(DEPARTMENTS)), manager,
                          messy(rng, title, 0.12), day(rng, "2008-01-01", "2024-10-31"), salary,
                          maybe(rng, float(rng.choice((1000, 2500, 5000, 10000))), 0.6)))
    projects = []
    for i in range(1, 61):
        start = day(rng, "2020-01-01", "2024-06-30")
        projects.append((i, f"Project {rng.choice(('Atlas', 'Beacon', 'Comet', 'Drift', 'Ember', 'Forge'))}-{i}",
                         rng.randint(1, len(DEPARTMENTS)), start,
                         maybe(rng, day(rng, start, "2025-06-30"), 0.4), rng.choice(("low", "medium", "high"))))
    assignments = [(i, rng.randint(1, 1500), rng.randint(1, 60), rng.choice(("lead", "contributor", "reviewer")),
                    rng.choice((4, 8, 10, 16, 20, 40))) for i in range(1, 2501)]
    return {"locations": locations, "departments": departments, "employees": employees, "projects": projects,
            "assignments": assignments}


SPEC = DatabaseSpec(
    name="hr", split="train", tables=TABLES, build_rows=build_rows,
    description="A company's people data: offices, departments, employees and managers, projects, assignments.",
)
