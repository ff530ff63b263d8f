"""Sandbox speed on the real Docker daemon, against `docker exec` and `docker run --rm` measured in the same run.

Figures (the issue's targets): a warm `run_python("print(1)")` and `run("ls")`; its ratios to `docker exec` (SDK
`exec_run`) and to `docker run --rm` (the CLI) of the same `python3 -c 'print(1)'`; taking a sandbox from the pool
with its reset; recovering from code that ignores the interrupt; short Python executions per second with 4
sandboxes. The local backend's figures are reported for information. Prints one JSON object.

Run: `python bench/sandbox.py` (needs the daemon and the image: `bash .ci/setup-docker.sh`).
"""

from __future__ import annotations

import json
import logging
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from _timing import figure, median_ms

from agentgym.sandbox import Sandbox, SandboxPool
from agentgym.sandbox.image import image_tag

logging.disable(logging.WARNING)


def recovery_ms(sandbox: Sandbox) -> float:
    """Time from the timeout to the next answer when the code ignores the interrupt and must be killed."""
    stubborn = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.001)"
    timeout = 0.05
    start = time.perf_counter()
    result = sandbox.run_python(stubborn, timeout=timeout)
    assert result.timed_out and "namespace is lost" in result.stderr, result
    assert sandbox.run_python("print(1)").stdout == "1\n"
    return (time.perf_counter() - start - timeout) * 1000


def throughput(sandboxes: list[Sandbox], seconds: float = 3.0) -> float:
    counts = [0] * len(sandboxes)
    stop = time.monotonic() + seconds

    def loop(index: int) -> None:
        sandbox = sandboxes[index]
        while time.monotonic() < stop:
            sandbox.run_python("x = 1")
            counts[index] += 1

    threads = [threading.Thread(target=loop, args=(index,)) for index in range(len(sandboxes))]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.monotonic() - started)


def main() -> int:
    tag = image_tag()
    hello = ["python3", "-c", "print(1)"]
    figures: dict[str, Any] = {}
    with Sandbox.create(backend="docker") as sandbox:
        python_ms = median_ms(lambda: sandbox.run_python("print(1)"), 500, warmup=5)
        shell_ms = median_ms(lambda: sandbox.run("ls"), 300, warmup=5)
        recover = statistics.median(recovery_ms(sandbox) for _ in range(7))
        container = sandbox.container  # type: ignore[attr-defined]
        exec_ms = median_ms(lambda: container.exec_run(hello), 20, warmup=2)
        container_recoveries = []
        for _ in range(3):  # the whole container killed from outside: the next call recreates it
            sandbox.container.kill()  # type: ignore[attr-defined]
            start = time.perf_counter()
            sandbox.run("true")
            assert sandbox.run("echo ok").stdout == "ok\n"
            container_recoveries.append((time.perf_counter() - start) * 1000)
    run_ms = median_ms(lambda: subprocess.run(["docker", "run", "--rm", "--network", "none", tag, *hello],
                                              capture_output=True, check=True), 8, warmup=1)
    with SandboxPool(4, backend="docker") as pool:
        # Each timed acquire resets a sandbox the previous episode dirtied (a file, a background process).
        samples = []
        for _ in range(60):
            sandbox = pool.acquire()
            sandbox.put_files({"episode.txt": "dirty"})
            sandbox.run("sleep 100 &")
            pool.release(sandbox)
            start = time.perf_counter()
            again = pool.acquire()
            samples.append(time.perf_counter() - start)
            pool.release(again)
        acquire_ms = statistics.median(samples[5:]) * 1000
        sandboxes = [pool.acquire() for _ in range(4)]
        per_second = throughput(sandboxes)
        for sandbox in sandboxes:
            pool.release(sandbox)
    figures["run_python_print_median_ms"] = figure(python_ms, "<= 1", python_ms <= 1)
    figures["run_python_vs_docker_exec_ratio"] = figure(exec_ms / python_ms, ">= 50", exec_ms / python_ms >= 50, 1)
    figures["run_python_vs_docker_run_rm_ratio"] = figure(run_ms / python_ms, ">= 200", run_ms / python_ms >= 200, 1)
    figures["run_ls_median_ms"] = figure(shell_ms, "<= 3", shell_ms <= 3)
    figures["pool_acquire_with_reset_median_ms"] = figure(acquire_ms, "<= 20", acquire_ms <= 20)
    figures["recover_from_killed_python_ms"] = figure(recover, "<= 300", recover <= 300, 1)
    figures["python_execs_per_second_4_sandboxes"] = figure(per_second, ">= 1000", per_second >= 1000, 0)
    with Sandbox.create(backend="local") as local:
        local_python = median_ms(lambda: local.run_python("print(1)"), 300, warmup=5)
        local_shell = median_ms(lambda: local.run("ls"), 200, warmup=5)
    result = {
        "bench": "sandbox",
        "figures": figures,
        "reference": {"docker_exec_median_ms": round(exec_ms, 1), "docker_run_rm_median_ms": round(run_ms, 1),
                      "docker_exec_how": "SDK container.exec_run(python3 -c 'print(1)') on a warm container",
                      "docker_run_how": "docker run --rm --network none IMAGE python3 -c 'print(1)' (CLI)"},
        "information": {"recover_from_killed_container_median_ms": round(statistics.median(container_recoveries), 1)},
        "local_backend": {"run_python_print_median_ms": round(local_python, 3),
                          "run_ls_median_ms": round(local_shell, 3)},
        "ok": all(item["ok"] for item in figures.values()),
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
