"""Benchmark of the FHIR data platform (issue 8); prints one JSON object.

Figures: generation time for a population (target at most 60 s for 1,000 patients), resources per patient
(at least 100), the median patient + code + date-range search (at most 5 ms), the import rate of NDJSON
with validation (at least 2,000 resources/s), store size on disk per 1,000 patients, and the median cost of
opening an episode (the FHIR env's reset budget is 20 ms).

Usage: python bench/fhir_data.py [--patients 1000] [--searches 300] [--import-resources 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource as rusage
import statistics
import sys
import tempfile
import time
from pathlib import Path



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--patients", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--import-resources", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()

    from agentgym_fhir.data.generate import generate_store
    from agentgym_fhir.data.importers import import_files
    from agentgym_fhir.store import FhirStore

    with tempfile.TemporaryDirectory(prefix="agentgym-fhir-bench-") as tmp:
        folder = Path(tmp)
        path = folder / "population.sqlite"
        load_before = os.getloadavg()[0]
        cpu_before = _cpu_seconds()
        started = time.perf_counter()
        store = generate_store(path, args.patients, args.seed, workers=args.workers)
        generation_s = time.perf_counter() - started
        generation_cpu_s = _cpu_seconds() - cpu_before
        total = store.count()
        per_patient = total / args.patients
        size_mb = path.stat().st_size / 1e6

        # Patient + code + date-range searches, the query FHIR agents make most.
        rng = random.Random(0)
        patients = [p["id"] for p in store.iter_resources("Patient")]
        codes = ["2823-3", "2160-0", "4548-4", "8867-4", "85354-9", "98979-8", "2345-7", "29463-7"]
        timings = []
        hits = 0
        for _ in range(args.searches):
            year = rng.randint(2019, 2024)
            params = {"patient": rng.choice(patients), "code": f"http://loinc.org|{rng.choice(codes)}",
                      "date": [f"ge{year}-01-01", f"lt{year + 1}-07-01"], "_sort": "-date"}
            begin = time.perf_counter()
            result = store.search("Observation", params)
            timings.append((time.perf_counter() - begin) * 1000)
            hits += len(result.entries)
        search_ms = statistics.median(timings)

        episode_timings = []
        for _ in range(200):
            begin = time.perf_counter()
            episode = store.episode()
            episode_timings.append((time.perf_counter() - begin) * 1000)
            episode.close()
        episode_ms = statistics.median(episode_timings)

        # Import: export the first N resources as NDJSON (one file per type), then import them.
        export = folder / "export"
        export.mkdir()
        files: dict[str, list[str]] = {}
        exported = 0
        for resource in store.iter_resources():
            files.setdefault(resource["resourceType"], []).append(json.dumps(resource))
            exported += 1
            if exported >= args.import_resources:
                break
        for resource_type, lines in files.items():
            (export / f"{resource_type}.ndjson").write_text("\n".join(lines) + "\n")
        store.close()
        rates, cpu_rates = {}, {}
        for validate in (True, False):
            target = FhirStore.create(folder / f"import-{validate}.sqlite")
            cpu_before = _cpu_seconds()
            begin = time.perf_counter()
            report = import_files(target, export, validate=validate)
            rates[validate] = report.imported / (time.perf_counter() - begin)
            cpu_rates[validate] = report.imported / max(1e-9, _cpu_seconds() - cpu_before)
            target.close()

    scale = 1000 / args.patients
    figures = {
        "patients": args.patients,
        "cpus": os.cpu_count(),
        "load_average_at_start": round(load_before, 2),
        "generation_s": round(generation_s, 2),
        "generation_cpu_s_all_processes": round(generation_cpu_s, 2),
        "generation_s_per_1000_patients": {"value": round(generation_s * scale, 2), "target": 60,
                                            "ok": generation_s * scale <= 60},
        "resources_per_patient": {"value": round(per_patient, 1), "target": 100, "ok": per_patient >= 100},
        "resources": total,
        "search_patient_code_date_median_ms": {"value": round(search_ms, 3), "target": 5, "ok": search_ms <= 5,
                                               "searches": args.searches,
                                               "p90_ms": round(sorted(timings)[int(0.9 * len(timings))], 3),
                                               "mean_results": round(hits / args.searches, 2)},
        "import_resources_per_s": {"value": round(rates[True]), "target": 2000, "ok": rates[True] >= 2000,
                                   "resources": exported, "validated": True},
        "import_resources_per_s_without_validation": round(rates[False]),
        "import_resources_per_cpu_s": {"validated": round(cpu_rates[True]), "unvalidated": round(cpu_rates[False])},
        "store_mb_per_1000_patients": round(size_mb * scale, 1),
        "episode_open_median_ms": {"value": round(episode_ms, 4), "target": 20, "ok": episode_ms <= 20},
    }
    figures["ok"] = all(v["ok"] for v in figures.values() if isinstance(v, dict) and "ok" in v)
    json.dump(figures, sys.stdout)
    sys.stdout.write("\n")


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (generator and import workers)."""
    own = rusage.getrusage(rusage.RUSAGE_SELF)
    children = rusage.getrusage(rusage.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
