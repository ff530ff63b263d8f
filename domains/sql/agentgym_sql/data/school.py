"""School: departments, teachers, students, courses and enrollments with grades (about 30,000 rows)."""

from __future__ import annotations

import random

from .schema import Column, DatabaseSpec, Rows, Table, key, ref
from .vocab import CITIES, day, maybe, messy, person_name

SUBJECTS = ("Art", "Biology", "Chemistry", "Economics", "English", "History", "Mathematics", "Music",
            "Physics", "Spanish")

TABLES = (
    Table("departments", "department", "departments", (
        key("department_id"),
        Column("department_name", "text", role="label", phrase="name"),
        Column("building", "text", role="category"),
    )),
    Table("teachers", "teacher", "teachers", (
        key("teacher_id"),
        Column("full_name", "text", role="label", phrase="name"),
        ref("department_id", "departments.department_id"),
        Column("title", "text", role="category", phrase="academic title"),
        Column("hired_on", "date", role="date", phrase="hire date"),
        Column("salary", "money", role="measure"),
    )),
    Table("students", "student", "students", (
        key("student_id"),
        Column("full_name", "text", role="label", phrase="name", messy=True),
        Column("home_city", "text", role="category", phrase="home city", messy=True),
        Column("year_level", "integer", role="measure", phrase="year level"),
        Column("enrolled_on", "date", role="date", phrase="enrollment date"),
        Column("scholarship", "money", role="measure", nullable=True),
    )),
    Table("courses", "course", "courses", (
        key("course_id"),
        Column("course_title", "text", role="label", phrase="title"),
        ref("department_id", "departments.department_id"),
        ref("teacher_id", "teachers.teacher_id", nullable=True),
        Column("credits", "integer", role="measure"),
        Column("term", "text", role="category"),
    )),
    Table("enrollments", "enrollment", "enrollments", (
        key("enrollment_id"),
        ref("student_id", "students.student_id"),
        ref("course_id", "courses.course_id"),
        Column("grade", "integer", role="measure", phrase="final grade", nullable=True),
        Column("registered_at", "timestamp", role="date", phrase="registration time"),
    )),
)


def build_rows(rng: random.Random, scale: int) -> Rows:
    departments = [(i, subject, rng.choice(("North Hall", "South Hall", "Science Block", "Arts Wing")))
                   for i, subject in enumerate(SUBJECTS, 1)]
    teachers = [(i, person_name(rng), rng.randint(1, len(SUBJECTS)), rng.choice(("lecturer", "professor", "tutor")),
                 day(rng, "1995-01-01", "2024-01-31"), float(rng.choice((48000, 56000, 64000, 72000, 88000))))
                for i in range(1, 151)]
    students = [(i, messy(rng, person_name(rng), 0.08), messy(rng, rng.choice(CITIES), 0.1), rng.randint(1, 4),
                 day(rng, "2020-08-15", "2024-09-15"), maybe(rng, float(rng.choice((500, 1000, 2000, 5000))), 0.75))
                for i in range(1, 4001)]
    courses = []
    for i in range(1, 201):
        department = rng.randint(1, len(SUBJECTS))
        level = rng.choice(("Introduction to", "Topics in", "Advanced", "Seminar in", "Foundations of"))
        courses.append((i, f"{level} {SUBJECTS[department - 1]} {100 + i}", department,
                        maybe(rng, rng.randint(1, 150), 0.08), rng.choice((2, 3, 3, 4, 5)),
                        rng.choice(("2023-fall", "2024-spring", "2024-fall"))))
    enrollments = [(i, rng.randint(1, 4000), rng.randint(1, 200), maybe(rng, rng.randint(35, 100), 0.1),
                    f"{day(rng, '2023-08-01', '2024-09-30')} {rng.randint(7, 22):02d}:{rng.randint(0, 59):02d}:00")
                   for i in range(1, 22001)]
    return {"departments": departments, "teachers": teachers, "students": students, "courses": courses,
            "enrollments": enrollments}


SPEC = DatabaseSpec(
    name="school", split="test", tables=TABLES, build_rows=build_rows,
    description="A secondary school: departments, teachers, students, courses and graded enrollments.",
)
