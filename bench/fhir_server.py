"""The FHIR REST server (`agentgym fhir serve`) as clients meet it: a read on a kept-alive connection against the
same read on a new connection (interleaved, in one run), and 64 clients connecting at once. Prints one JSON
object.

    python bench/fhir_server.py [--patients 30] [--reads 200]

Targets (issue 31): a keep-alive read costs no more than a new-connection read and its median is under 5 ms;
all 64 simultaneous clients get answers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from _timing import figure
from agentgym_fhir.data.generate import generate_store
from agentgym_fhir.server import make_server


def _read(connection: http.client.HTTPConnection, path: str) -> None:
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    assert response.status == 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=30)
    parser.add_argument("--reads", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = generate_store(Path(directory) / "pop.sqlite", options.patients, seed=0, workers=1)
        server = make_server(store, port=0)
        server.start_background()
        try:
            base = server.url
            patient = httpx.get(f"{base}/Patient", params={"_count": 1}).json()["entry"][0]["resource"]["id"]
            url = f"{base}/Patient/{patient}"
            host, port = server.server_address[:2]
            path = httpx.URL(url).raw_path.decode()
            kept, fresh = [], []
            client = http.client.HTTPConnection(str(host), port)  # the same client for both: only the connection differs
            _read(client, path)
            for _ in range(options.reads):
                start = time.perf_counter()
                _read(client, path)
                kept.append(time.perf_counter() - start)
                start = time.perf_counter()
                once = http.client.HTTPConnection(str(host), port)
                _read(once, path)
                once.close()
                fresh.append(time.perf_counter() - start)
            client.close()
            answered = []

            def one_client() -> None:
                try:
                    answered.append(httpx.get(url, timeout=30).status_code == 200)
                except httpx.HTTPError:
                    answered.append(False)

            threads = [threading.Thread(target=one_client) for _ in range(64)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            server.shutdown()
            server.server_close()
    kept_ms, fresh_ms = statistics.median(kept) * 1000, statistics.median(fresh) * 1000
    ratio = kept_ms / fresh_ms
    figures = {
        "keep_alive_read_vs_new_connection": figure(ratio, "<= 1.0x", ratio <= 1.0, digits=2),
        "keep_alive_read_median_ms": figure(kept_ms, "< 5", kept_ms < 5, digits=2),
        "simultaneous_clients_answered_of_64": figure(sum(answered), "64", sum(answered) == 64, digits=0),
    }
    print(json.dumps({"bench": "fhir_server", "patients": options.patients, "reads": options.reads,
                      "figures": figures, "reference": {"new_connection_read_median_ms": round(fresh_ms, 2)},
                      "ok": all(item["ok"] for item in figures.values())}, indent=1))


if __name__ == "__main__":
    main()
