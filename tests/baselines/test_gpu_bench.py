"""bench/gpu.py's code path on CPU: the figures a GPU run reports are computed, and a skip never reads as ok.

There is no GPU here, so `--cpu-smoke` runs the same sections with tiny sizes: real TT-OPD steps through
`agentgym train`'s trainer builder on SQL-v0, and the knowledge base's IVF-PQ index searched by `VectorIndex`.
The EMA probe is also checked on its own, on a teacher that is frozen and on one updated in pure bf16, so the
"teacher moves" figure is known to tell those apart from an EMA that works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import gpu
from agentgym_baselines.tiny import build_tiny_model
from agentgym_baselines.ttopd import ema_update


def _run_bench(*arguments: str, timeout: float) -> tuple[int, dict[str, Any]]:
    environment = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1"}
    completed = subprocess.run([sys.executable, str(BENCH / "gpu.py"), *arguments], capture_output=True,
                               text=True, timeout=timeout, env=environment, check=False)
    lines = completed.stdout.strip().splitlines()
    assert len(lines) == 1, f"stdout must hold the one JSON object, got: {completed.stdout[-2000:]}"
    return completed.returncode, json.loads(lines[0])


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the bench would measure")
def test_without_cuda_every_figure_is_skipped_and_nothing_is_ok() -> None:
    code, report = _run_bench(timeout=60)
    assert code == 0
    assert "ok" not in report
    assert "CUDA" in report["skipped"]
    assert "CUDA" in report["training"]["skipped"] and "CUDA" in report["faiss"]["skipped"]


def test_cpu_smoke_computes_every_figure_and_is_still_a_skip() -> None:
    code, report = _run_bench("--cpu-smoke", timeout=150)
    assert code == 0, report
    assert "ok" not in report and "failed" not in report
    assert "nothing measured on a GPU" in report["skipped"]

    training = report["training"]
    assert training["env"] == "SQL-v0" and training["steps"] == gpu.SMOKE_SIZES.steps
    assert training["model"]["vocab_size"] == gpu.SMOKE_SIZES.vocab_size
    assert training["tokens_per_second"] > 0 and training["rollouts_per_second"] > 0
    assert training["generated_tokens_per_second"] > 0
    updates = training["ema_updates"]
    assert [update["step"] for update in updates] == list(range(1, gpu.SMOKE_SIZES.steps + 1))
    for update in updates:
        assert update["kind"] == "ema"
        assert update["student_changed_fraction"] > 0.5  # the optimizer really moved the student
        assert update["teacher_changed_fraction"] > 0.5  # and the teacher followed
        assert update["lost_fraction"] < 0.01  # to within fp32 rounding of the float64 EMA
    assert report["checks"]["ema_teacher_moves"] and report["checks"]["teacher_follows_exact_ema"]

    search = report["faiss"]
    assert search["index"]["type"] == "ivfpq"  # the type the KB picks at 1M vectors
    assert search["gpu_side"].startswith("cpu")
    assert search["top10_agreement"] == 1.0  # the stand-in is the same CPU index
    assert search["cpu_recall_at_10"] > 0.5 and search["cpu_queries_per_second"] > 0


def _probe_on(teacher: torch.nn.Module, student: torch.nn.Module, update: Any,
              master: list[torch.Tensor | None] | None = None) -> gpu.TeacherProbe:
    # The probe only reads these five attributes of a TTOPDTrainer; building a real trainer per case would cost a
    # TRL start-up each, and the real trainer is exercised by the smoke run above.
    trainer = types.SimpleNamespace(teacher=teacher, model=student, args=types.SimpleNamespace(ema_decay=0.995),
                                    accelerator=types.SimpleNamespace(unwrap_model=lambda model: model),
                                    update_teacher=update, teacher_master=master)
    return gpu.TeacherProbe(trainer)


def _nudge(model: torch.nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1e-3 * torch.randn(parameter.shape, generator=generator).to(parameter.dtype))


@pytest.fixture(scope="module")
def tiny_pair() -> tuple[torch.nn.Module, torch.nn.Module]:
    student, _ = build_tiny_model(0)
    teacher, _ = build_tiny_model(0)
    return student, teacher


def test_probe_reports_a_frozen_teacher_as_not_moving(tiny_pair: tuple[torch.nn.Module, torch.nn.Module]) -> None:
    student, teacher = (model.float() for model in tiny_pair)
    probe = _probe_on(teacher, student, lambda step: "ema")  # says "ema" but leaves the teacher where it is
    for step in (1, 2, 3):
        _nudge(student, step)
        probe.trainer.update_teacher(step)
    assert all(update["teacher_changed_fraction"] == 0.0 for update in probe.updates)
    assert probe.updates[-1]["lost_fraction"] == pytest.approx(1.0)


def test_probe_tells_a_pure_bf16_ema_from_one_with_an_fp32_master(
        tiny_pair: tuple[torch.nn.Module, torch.nn.Module]) -> None:
    lost = {}
    for name in ("pure bf16", "fp32 master"):
        student, _ = build_tiny_model(0)
        teacher, _ = build_tiny_model(0)
        student, teacher = student.to(torch.bfloat16), teacher.to(torch.bfloat16)
        if name == "pure bf16":
            master: list[torch.Tensor | None] = [None] * len(list(teacher.parameters()))
            # ema_update treats None as "this parameter is its own master": the bf16 EMA the issue describes.
        else:
            master = [parameter.detach().float().clone() for parameter in teacher.parameters()]

        def update(step: int, teacher: torch.nn.Module = teacher, student: torch.nn.Module = student,
                   master: list[torch.Tensor | None] = master) -> str:
            ema_update(teacher, student, master, 0.995)
            return "ema"

        probe = _probe_on(teacher, student, update, master)
        for step in range(1, 6):
            _nudge(student, step)
            probe.trainer.update_teacher(step)
        lost[name] = probe.updates[-1]["lost_fraction"]
    assert lost["pure bf16"] > 0.5  # most of the EMA's movement rounds away
    assert lost["fp32 master"] < 0.01  # its master follows the float64 EMA
