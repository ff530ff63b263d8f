"""Hospital: departments, doctors, patients, admissions and lab results (about 30,000 rows)."""

from __future__ import annotations

import random

from .schema import Column, DatabaseSpec, Rows, Table, key, ref
from .vocab import CITIES, day, maybe, messy, moment, person_name, shift

DEPARTMENTS = ("Cardiology", "Dermatology", "Emergency", "Endocrinology", "Gastroenterology", "Neurology",
               "Oncology", "Orthopedics", "Pediatrics", "Psychiatry", "Pulmonology", "Urology")
DIAGNOSES = ("asthma", "appendicitis", "bronchitis", "concussion", "diabetes", "fracture", "influenza",
             "migraine", "pneumonia", "hypertension")
TESTS = ("glucose", "hemoglobin", "potassium", "sodium", "creatinine", "cholesterol")

TABLES = (
    Table("departments", "department", "departments", (
        key("department_id"),
        Column("department_name", "text", role="label", phrase="name"),
        Column("floor", "integer", role="measure"),
    )),
    Table("doctors", "doctor", "doctors", (
        key("doctor_id"),
        Column("full_name", "text", role="label", phrase="name"),
        ref("department_id", "departments.department_id"),
        Column("grade", "text", role="category", phrase="seniority grade"),
        Column("hire_date", "date", role="date", phrase="hire date"),
        Column("salary", "money", role="measure"),
    )),
    Table("patients", "patient", "patients", (
        key("patient_id"),
        Column("full_name", "text", role="label", phrase="name", messy=True),
        Column("sex", "text", role="category"),
        Column("birth_date", "date", role="date", phrase="date of birth"),
        Column("blood_type", "text", role="category", phrase="blood type", nullable=True),
        Column("city", "text", role="category"),
    )),
    Table("admissions", "admission", "admissions", (
        key("admission_id"),
        ref("patient_id", "patients.patient_id"),
        ref("doctor_id", "doctors.doctor_id"),
        Column("admitted_at", "timestamp", role="date", phrase="admission time"),
        Column("discharged_at", "timestamp", role="date", phrase="discharge time", nullable=True),
        Column("diagnosis", "text", role="category"),
        Column("ward", "text", role="category"),
        Column("total_cost", "money", role="measure", phrase="total cost"),
    )),
    Table("lab_results", "lab result", "lab results", (
        key("result_id"),
        ref("admission_id", "admissions.admission_id"),
        Column("test_name", "text", role="category", phrase="test"),
        Column("result_value", "real", role="measure", phrase="measured value"),
        Column("flag", "text", role="category", phrase="abnormal flag", nullable=True),
    )),
)


def build_rows(rng: random.Random, scale: int) -> Rows:
    departments = [(i, name, 1 + (i - 1) // 3) for i, name in enumerate(DEPARTMENTS, 1)]
    doctors = [(i, f"Dr. {person_name(rng)}", rng.randint(1, len(DEPARTMENTS)),
                rng.choice(("resident", "registrar", "consultant")), day(rng, "2000-01-01", "2023-12-31"),
                float(rng.choice((90000, 120000, 150000, 180000))) + 5000 * rng.randint(0, 6))
               for i in range(1, 151)]
    patients = [(i, messy(rng, person_name(rng), 0.08), rng.choice(("F", "M")), day(rng, "1935-01-01", "2022-12-31"),
                 maybe(rng, rng.choice(("A+", "A-", "B+", "B-", "AB+", "AB-", "O+", "O-")), 0.15),
                 rng.choice(CITIES)) for i in range(1, 3001)]
    admissions = []
    for i in range(1, 7001):
        admitted = moment(rng, "2022-01-01", "2024-12-31")
        discharged = None if rng.random() < 0.07 else shift(admitted, rng.randint(2, 24 * 20) * 60)
        admissions.append((i, rng.randint(1, 3000), rng.randint(1, 150), admitted, discharged,
                           rng.choice(DIAGNOSES), rng.choice(("general", "icu", "maternity", "surgical")),
                           round(rng.choice((500, 1000, 2500)) + rng.randint(0, 40) * 250.0, 2)))
    results = []
    for i in range(1, 15001):
        value = round(rng.uniform(1, 250), 1)
        results.append((i, rng.randint(1, 7000), rng.choice(TESTS), value,
                        maybe(rng, rng.choice(("high", "low", "critical")), 0.7)))
    return {"departments": departments, "doctors": doctors, "patients": patients, "admissions": admissions,
            "lab_results": results}


SPEC = DatabaseSpec(
    name="hospital", split="train", tables=TABLES, build_rows=build_rows,
    description="A hospital: departments, doctors, patients, their admissions and laboratory results.",
)
