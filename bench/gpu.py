"""GPU figures through the project's own code: `agentgym train ttopd` steps, and the knowledge base's FAISS index.

    python bench/gpu.py              # on a CUDA machine; elsewhere prints {"skipped": ...} and exits 0
    python bench/gpu.py --cpu-smoke  # the same code path on CPU with tiny sizes (what tests/baselines checks)

1. TT-OPD training (`agentgym_baselines.training.build_trainer`, the function `agentgym train ttopd` calls, on
   SQL-v0): a randomly initialised model of Qwen2.5-0.5B's shape (hidden 896, 24 layers, 14 heads, 2 KV heads,
   intermediate 4864, vocabulary 151,936, tied embeddings: 494M parameters) is built from its config, saved in
   bf16 to a temporary folder and loaded from there as `--model DIR` (nothing is downloaded; vLLM reads the same
   folder). The tokenizer is `tiny:random`'s BPE padded with unreachable byte strings to the model's 151,936
   ids, so every id a random model samples decodes. On CUDA the trainer runs bf16 mixed precision with fp32
   master weights and, when `vllm` imports, TRL's vLLM generation colocated on the same GPU. Shipped TT-OPD
   defaults (lr, β = 0.995, λ, K, hints) except `ema_every=1, hard_copy_every=0`, so every step is an EMA
   update to measure. Figures, per optimizer step after the first (warm-up, compilation): tokens/s (prompt and
   completion tokens through the step), generated tokens/s, rollouts/s; per EMA update: the fraction of teacher
   weights that changed, the fraction of student weights the optimizer changed, and how far the teacher is
   from an EMA of the same student weights kept in float64 (as a share of the distance that EMA has moved).
2. FAISS (`agentgym_knowledge.index`): the KB's index for 1,000,000 unit vectors of 384 dimensions (the KB
   embedder's width; clustered, so recall means something), which is IVF-PQ at that size, built on the CPU as
   the KB builds it, then `VectorIndex` with and without its GPU copy over the same vectors: build and GPU-copy
   time, batch and single-query latency, top-10 agreement between GPU and CPU results, and each one's recall
   against exact search.

Sizing (one GPU, 10 minutes): model build and save about 30 s, vLLM start-up with compilation 1-3 min, 6
optimizer steps of 16 rollouts (2 prompts x 8 generations, the default 512-token completion budget, so the
tool-output cap is fitted to it as `agentgym train` does) a few seconds each, the
FAISS part about 2-3 min (CPU IVF-PQ build over 1M vectors, 10,000 queries each side). `wall_seconds` in the
output shows what a run took. Without CUDA every figure is marked skipped with the reason, and nothing reports
`ok`; `--cpu-smoke` computes every figure on CPU (the GPU side of FAISS is then the CPU index standing in) and
is marked skipped too, since nothing ran on a GPU. One JSON object is printed on stdout (the libraries' logs
go to stderr); the exit status is 1 when a section failed, and the failure is in the JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import itertools
import json
import math
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class Sizes:
    """How big each part runs: the full GPU run, or the CPU smoke run of the same code."""

    hidden_size: int
    intermediate_size: int
    layers: int
    heads: int
    kv_heads: int
    vocab_size: int
    steps: int
    generations: int
    prompts_per_step: int
    max_completion_length: int | None  # None: `agentgym train`'s default, with the tool-output cap fitted to it
    vectors: int
    dimension: int
    clusters: int
    queries: int
    exact_queries: int
    single_queries: int


GPU_SIZES = Sizes(hidden_size=896, intermediate_size=4864, layers=24, heads=14, kv_heads=2, vocab_size=151_936,
                  steps=6, generations=8, prompts_per_step=2, max_completion_length=None,
                  vectors=1_000_000, dimension=384, clusters=4096, queries=10_000, exact_queries=1_000,
                  single_queries=200)
SMOKE_SIZES = Sizes(hidden_size=64, intermediate_size=128, layers=2, heads=4, kv_heads=2, vocab_size=4096,
                    steps=2, generations=2, prompts_per_step=1, max_completion_length=48,
                    vectors=10_000, dimension=16, clusters=32, queries=200, exact_queries=100, single_queries=20)
ENV_ID = "SQL-v0"
TOP_K = 10


# ------------------------------------------------------------------------------------------------ the model
def padded_tokenizer(vocab_size: int) -> Any:
    """`tiny:random`'s tokenizer with its BPE vocabulary padded to `vocab_size` ids.

    The extra entries are three-character byte-level strings no merge produces: text tokenizes exactly as with
    the tiny tokenizer, while every id a random model of a real vocabulary size samples decodes to some bytes.
    """
    from agentgym_baselines.tiny import build_tiny_tokenizer
    from tokenizers import Tokenizer, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tiny = build_tiny_tokenizer(0)
    data = json.loads(tiny.backend_tokenizer.to_str())
    vocab: dict[str, int] = data["model"]["vocab"]
    next_id = max([*vocab.values(), *(token["id"] for token in data["added_tokens"])]) + 1
    if next_id > vocab_size:
        raise ValueError(f"vocab_size {vocab_size} is below the tiny tokenizer's {next_id} ids")
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    for letters in itertools.product(alphabet, repeat=3):
        if next_id >= vocab_size:
            break
        text = "".join(letters)
        if text not in vocab:
            vocab[text] = next_id
            next_id += 1
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(data)), eos_token=tiny.eos_token, pad_token=tiny.pad_token,
        padding_side="left", additional_special_tokens=["<|im_start|>"])
    tokenizer.chat_template = tiny.chat_template
    return tokenizer


def save_random_model(folder: Path, sizes: Sizes) -> dict[str, Any]:
    """Write a randomly initialised Qwen2 causal LM of `sizes`' shape (bf16) and its tokenizer to `folder`."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = padded_tokenizer(sizes.vocab_size)
    config = Qwen2Config(
        vocab_size=sizes.vocab_size, hidden_size=sizes.hidden_size, intermediate_size=sizes.intermediate_size,
        num_hidden_layers=sizes.layers, num_attention_heads=sizes.heads, num_key_value_heads=sizes.kv_heads,
        max_position_embeddings=32_768, tie_word_embeddings=True, bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return {"architecture": "Qwen2ForCausalLM (Qwen2.5-0.5B shape)" if sizes is GPU_SIZES else "Qwen2ForCausalLM",
            "parameters": parameters, "vocab_size": sizes.vocab_size, "saved_dtype": "bfloat16"}


# ------------------------------------------------------------------------------------------------ EMA probe
class TeacherProbe:
    """Wraps `TTOPDTrainer.update_teacher` to measure each teacher update against a float64 EMA reference.

    Per update: `teacher_changed_fraction` (teacher weights whose value changed), `student_changed_fraction`
    (student weights the optimizer step changed since the previous update), and `lost_fraction`, the distance
    from the teacher to the float64 EMA of the same student weights over the distance that reference has moved
    from the initial teacher (0: the teacher follows the exact EMA; 1: it stayed where it started). Where the
    trainer keeps an fp32 master of a low-precision teacher (`teacher_master`), the master is what is compared:
    the computing weights are that master rounded once, a rounding no EMA can beat.
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.original = trainer.update_teacher
        teacher = trainer.teacher
        self.total = sum(parameter.numel() for parameter in teacher.parameters())
        self.initial = [weights.detach().float().clone() for weights in self._effective_teacher()]
        self.reference = [weights.detach().double().clone() for weights in self._effective_teacher()]
        self.previous_student = [parameter.detach().clone() for parameter in self._student().parameters()]
        self.updates: list[dict[str, Any]] = []
        self.seconds_by_step: dict[int, float] = {}
        trainer.update_teacher = self.update_teacher

    def _student(self) -> Any:
        return self.trainer.accelerator.unwrap_model(self.trainer.model)

    def _effective_teacher(self) -> list[torch.Tensor]:
        """The teacher's weights as the EMA holds them: its fp32 master where it keeps one, else the parameter."""
        parameters = list(self.trainer.teacher.parameters())
        master = getattr(self.trainer, "teacher_master", None) or [None] * len(parameters)
        return [parameter if weights is None else weights for parameter, weights in zip(parameters, master,
                                                                                         strict=True)]

    @torch.no_grad()
    def update_teacher(self, global_step: int) -> str | None:
        started = time.perf_counter()
        teacher = self.trainer.teacher
        before = [parameter.detach().clone() for parameter in teacher.parameters()]
        update_started = time.perf_counter()
        kind = self.original(global_step)  # the trainer's own update: the only part counted in the step's time
        update_seconds = time.perf_counter() - update_started
        student = list(self._student().parameters())
        student_changed = sum(int((now != then).sum()) for now, then in zip(student, self.previous_student,
                                                                              strict=True))
        self.previous_student = [parameter.detach().clone() for parameter in student]
        if kind is not None:
            decay = 1.0 if kind == "copy" else float(self.trainer.args.ema_decay)
            teacher_changed = 0
            lost_squared = moved_squared = 0.0
            for reference, initial, old, new, effective, source in zip(
                    self.reference, self.initial, before, teacher.parameters(), self._effective_teacher(), student,
                    strict=True):
                reference.mul_(decay).add_(source.detach().double(), alpha=1.0 - decay)
                teacher_changed += int((new != old).sum())
                lost_squared += float(((effective.double() - reference) ** 2).sum())
                moved_squared += float(((reference - initial.double()) ** 2).sum())
            self.updates.append({
                "step": global_step, "kind": kind, "teacher_dtype": str(next(teacher.parameters()).dtype),
                "teacher_changed_fraction": teacher_changed / self.total,
                "student_changed_fraction": student_changed / self.total,
                "lost_fraction": math.sqrt(lost_squared / moved_squared) if moved_squared > 0 else None,
            })
        self.seconds_by_step[global_step] = time.perf_counter() - started - update_seconds
        return kind


class StepTimer:
    """Trainer callback timing each optimizer step (generation, scoring, backward, optimizer, teacher update)."""

    def __init__(self) -> None:
        from transformers import TrainerCallback

        timer = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                timer.started = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                timer.seconds[state.global_step] = time.perf_counter() - timer.started

        self.started = 0.0
        self.seconds: dict[int, float] = {}
        self.callback = _Callback()


# ------------------------------------------------------------------------------------------------ training
def training_section(sizes: Sizes, smoke: bool, workdir: Path) -> dict[str, Any]:
    """Run `sizes.steps` TT-OPD steps through `agentgym train`'s trainer builder and measure them."""
    from agentgym_baselines.training import RunSettings, build_trainer, vllm_available

    started = time.perf_counter()
    model_folder = workdir / "random-model"
    result: dict[str, Any] = {"env": ENV_ID, "model": save_random_model(model_folder, sizes)}
    rollouts_per_step = sizes.generations * sizes.prompts_per_step
    config: dict[str, Any] = {
        "max_steps": sizes.steps, "num_generations": sizes.generations,
        "per_device_train_batch_size": rollouts_per_step, "ema_every": 1, "hard_copy_every": 0,
        "save_strategy": "no",
    }
    if sizes.max_completion_length is not None:
        config["max_completion_length"] = sizes.max_completion_length
    use_vllm = False if smoke else vllm_available()
    if smoke:
        config.update({"use_cpu": True, "bf16": False, "learning_rate": 1e-3, "gradient_checkpointing": False})
    elif use_vllm:
        # vLLM shares the GPU with the trainer; a 4,096-token window holds SQL-v0's prompt and the completion.
        config.update({"vllm_gpu_memory_utilization": 0.3, "vllm_max_model_length": 4096})
    settings = RunSettings(method="ttopd", env_id=ENV_ID, model=str(model_folder), output_dir=str(workdir / "run"),
                           config=config, use_vllm=use_vllm)
    trainer = build_trainer(settings)
    probe = TeacherProbe(trainer)
    timer = StepTimer()
    trainer.add_callback(timer.callback)
    result["setup_seconds"] = round(time.perf_counter() - started, 1)
    trainer.train()
    args = trainer.args
    result.update({
        "vllm": bool(getattr(args, "use_vllm", False)),
        "generation": "vLLM colocated" if getattr(args, "use_vllm", False) else (
            "transformers generate" + ("" if smoke or importlib.util.find_spec("vllm") else
                                       " (vllm is not installed: pip install 'agentgym-baselines[gpu]')")),
        "student_dtype": str(next(trainer.model.parameters()).dtype), "bf16_autocast": bool(args.bf16),
        "learning_rate": args.learning_rate, "ema_decay": args.ema_decay, "kl_coef": args.kl_coef,
        "rollouts_per_step": rollouts_per_step, "max_completion_length": args.max_completion_length,
        "steps": trainer.state.global_step, "fit_notes": trainer.fit_notes,
    })
    logs = {entry["step"]: entry for entry in trainer.state.log_history if "num_tokens" in entry}
    steps = []
    previous_tokens = 0.0
    for step in sorted(timer.seconds):
        seconds = timer.seconds[step] - probe.seconds_by_step.get(step, 0.0)
        tokens = float(logs[step]["num_tokens"]) if step in logs else math.nan
        generated = float(logs[step].get("completions/mean_length", math.nan)) * rollouts_per_step \
            if step in logs else math.nan
        steps.append({"step": step, "seconds": round(seconds, 3), "tokens": tokens - previous_tokens,
                      "generated_tokens": generated})
        previous_tokens = tokens
    result["per_step"] = steps
    timed = steps[1:] or steps  # the first step carries compilation and warm-up
    seconds = sum(item["seconds"] for item in timed)
    result.update({
        "timed_steps": len(timed),
        "median_step_seconds": round(statistics.median(item["seconds"] for item in timed), 3),
        "tokens_per_second": round(sum(item["tokens"] for item in timed) / seconds, 1),
        "generated_tokens_per_second": round(sum(item["generated_tokens"] for item in timed) / seconds, 1),
        "rollouts_per_second": round(rollouts_per_step * len(timed) / seconds, 3),
        "ema_updates": probe.updates,
        "min_teacher_changed_fraction": min(item["teacher_changed_fraction"] for item in probe.updates),
        "max_lost_fraction": max((item["lost_fraction"] or 0.0) for item in probe.updates),
    })
    if torch.cuda.is_available() and not smoke:
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    del trainer, probe
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return result


# ------------------------------------------------------------------------------------------------ FAISS
def clustered_unit_vectors(count: int, dimension: int, clusters: int, seed: int) -> np.ndarray:
    """`count` unit vectors scattered around `clusters` random centres (nearest neighbours are meaningful)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dimension), dtype=np.float32)
    vectors = np.empty((count, dimension), dtype=np.float32)
    for start in range(0, count, 100_000):
        stop = min(start + 100_000, count)
        noise = rng.standard_normal((stop - start, dimension), dtype=np.float32)
        vectors[start:stop] = centres[rng.integers(0, clusters, stop - start)] + 0.6 * noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def _agreement(left: np.ndarray, right: np.ndarray) -> float:
    """Mean share of the top-k positions two result sets have in common."""
    return float(np.mean([len(set(a[a >= 0]) & set(b[b >= 0])) / left.shape[1] for a, b in zip(left, right,
                                                                                                   strict=True)]))


def _time_search(index: Any, queries: np.ndarray, singles: int) -> tuple[np.ndarray, float, float]:
    """(positions, batch seconds, median single-query milliseconds) of `index.search` at k = TOP_K."""
    index.search(queries[:10], TOP_K)  # warm-up
    started = time.perf_counter()
    _, positions = index.search(queries, TOP_K)
    batch = time.perf_counter() - started
    latencies = []
    for row in range(singles):
        started = time.perf_counter()
        index.search(queries[row : row + 1], TOP_K)
        latencies.append(time.perf_counter() - started)
    return positions, batch, statistics.median(latencies) * 1000


def faiss_section(sizes: Sizes, smoke: bool) -> dict[str, Any]:
    """The KB's index over `sizes.vectors` vectors: CPU `VectorIndex` against its GPU copy."""
    import faiss
    from agentgym_knowledge.index import VectorIndex, build_index, choose_index_type, gpu_count

    gpus = gpu_count()
    if gpus == 0 and not smoke:
        return {"skipped": "the installed faiss has no GPU support (faiss-cpu); on a CUDA machine install "
                           "faiss-gpu instead (see docs/knowledge.md, GPU)"}
    vectors = clustered_unit_vectors(sizes.vectors, sizes.dimension, sizes.clusters, seed=0)
    queries = clustered_unit_vectors(sizes.queries, sizes.dimension, sizes.clusters, seed=0)
    queries += 0.05 * np.random.default_rng(1).standard_normal(queries.shape, dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    # Smoke sizes fall under the IVF-PQ threshold; force the type the full run gets, so the same path runs.
    kind = "ivfpq" if smoke else choose_index_type(sizes.vectors)
    started = time.perf_counter()
    index, parameters = build_index(vectors, kind)
    build_seconds = time.perf_counter() - started
    cpu = VectorIndex(index, vectors, parameters, use_gpu=False)
    started = time.perf_counter()
    gpu = VectorIndex(index, vectors, parameters, use_gpu=gpus > 0)
    copy_seconds = time.perf_counter() - started
    cpu_positions, cpu_batch, cpu_single = _time_search(cpu, queries, sizes.single_queries)
    gpu_positions, gpu_batch, gpu_single = _time_search(gpu, queries, sizes.single_queries)
    exact = faiss.IndexFlatIP(sizes.dimension)
    exact.add(vectors)
    _, truth = exact.search(queries[: sizes.exact_queries], TOP_K)
    result: dict[str, Any] = {
        "vectors": sizes.vectors, "dimension": sizes.dimension, "queries": sizes.queries, "k": TOP_K,
        "index": parameters, "gpus": gpus, "gpu_side": gpu.device if gpus else "cpu (stand-in: no GPU)",
        "cpu_build_seconds": round(build_seconds, 2), "gpu_copy_seconds": round(copy_seconds, 3),
        "cpu_batch_seconds": round(cpu_batch, 3), "gpu_batch_seconds": round(gpu_batch, 3),
        "cpu_queries_per_second": round(sizes.queries / cpu_batch, 1),
        "gpu_queries_per_second": round(sizes.queries / gpu_batch, 1),
        "cpu_single_query_ms": round(cpu_single, 3), "gpu_single_query_ms": round(gpu_single, 3),
        "speedup": round(cpu_batch / gpu_batch, 2),
        "top10_agreement": round(_agreement(gpu_positions, cpu_positions), 4),
        "top1_agreement": round(float((gpu_positions[:, 0] == cpu_positions[:, 0]).mean()), 4),
        "cpu_recall_at_10": round(_agreement(cpu_positions[: sizes.exact_queries], truth), 4),
        "gpu_recall_at_10": round(_agreement(gpu_positions[: sizes.exact_queries], truth), 4),
    }
    del gpu
    gc.collect()
    return result


# ------------------------------------------------------------------------------------------------ report
def checks(report: dict[str, Any]) -> dict[str, bool]:
    """What a GPU run must show: the teacher follows the EMA, and the GPU index answers as the CPU index does."""
    training, search = report.get("training", {}), report.get("faiss", {})
    return {
        "training_ran": training.get("steps", 0) >= 2,
        "ema_teacher_moves": training.get("min_teacher_changed_fraction", 0.0) > 0.5,
        "teacher_follows_exact_ema": training.get("max_lost_fraction", 1.0) < 0.05,
        "gpu_index_agrees_with_cpu": search.get("top10_agreement", 0.0) >= 0.99,
    }


def run_section(function: Any, *args: Any) -> dict[str, Any]:
    """The section's figures, or {"failed": ...} with the traceback's tail: reported, never hidden."""
    started = time.perf_counter()
    try:
        result = function(*args)
    except Exception as error:  # noqa: BLE001 - a section that raises is reported in the JSON and the exit status
        return {"failed": f"{type(error).__name__}: {error}",
                "traceback": traceback.format_exc().splitlines()[-12:]}
    result["section_seconds"] = round(time.perf_counter() - started, 1)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="Run the same code on CPU with tiny sizes (checks the script; measures nothing on a GPU).")
    parser.add_argument("--skip-training", action="store_true", help="Only the FAISS part.")
    parser.add_argument("--skip-faiss", action="store_true", help="Only the training part.")
    options = parser.parse_args(argv)
    cuda = torch.cuda.is_available()
    report: dict[str, Any] = {"bench": "gpu", "torch": torch.__version__}
    if not cuda and not options.cpu_smoke:
        reason = "no CUDA device on this machine"
        # A skip is not a pass: no "ok" key, so nothing reads it as a measured success.
        report.update({"skipped": reason, "training": {"skipped": reason}, "faiss": {"skipped": reason}})
        print(json.dumps(report))
        return 0
    smoke = options.cpu_smoke
    sizes = SMOKE_SIZES if smoke else GPU_SIZES
    if smoke:
        # Tiny sizes gain nothing from threads, and on a shared CPU spinning thread pools cost several times over.
        import faiss

        torch.set_num_threads(1)
        faiss.omp_set_num_threads(1)
    report.update({"device": "cpu" if smoke or not cuda else torch.cuda.get_device_name(0), "cpu_smoke": smoke})
    started = time.perf_counter()
    # TRL and transformers print their logs to stdout; keep stdout for the one JSON object.
    with tempfile.TemporaryDirectory(prefix="agentgym-gpu-bench-") as workdir, \
            contextlib.redirect_stdout(sys.stderr):
        if not options.skip_faiss:
            report["faiss"] = run_section(faiss_section, sizes, smoke)
        if not options.skip_training:
            report["training"] = run_section(training_section, sizes, smoke, Path(workdir))
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    report["checks"] = checks(report)
    skipped = [name for name in ("training", "faiss") if "skipped" in report.get(name, {"skipped": "not run"})]
    failures = [name for name in ("training", "faiss") if "failed" in report.get(name, {})]
    if failures:
        report["failed"] = failures
    if smoke:
        report["skipped"] = "cpu smoke run: every figure computed on CPU, nothing measured on a GPU"
    elif skipped or failures:
        report["skipped"] = f"not measured on the GPU: {', '.join(skipped + failures)}"
    else:
        report["ok"] = all(report["checks"].values())
    print(json.dumps(report, default=str))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
