"""GPU figures for the baselines: training-step throughput of a ~0.5B model, and FAISS GPU search.

    python bench/gpu.py            # on a CUDA machine; elsewhere prints {"skipped": ...} and exits 0
    python bench/gpu.py --smoke    # the same code on CPU with a tiny model and index (checks the script)

1. Tokens per second of one training step (forward, backward, AdamW) of a randomly initialised Qwen3-shaped
   model of about 0.5B parameters (Qwen2.5-0.5B's shape: hidden 896, 24 layers, 14 heads, 2 KV heads,
   vocabulary 151,936, tied embeddings) in bf16 autocast, batch 8 x 1024 tokens; median of 5 timed steps after 2
   warm-up steps. Target: at least 10,000 tokens/s.
2. FAISS: exact (flat, L2) search of 10,000 queries over 1,000,000 random 128-d vectors, k = 10, on the GPU
   when the installed faiss has GPU support, against the same search on the CPU over a 100,000-vector slice
   (scaled to the full index). Target: GPU at least 5x the CPU's queries per second. Skipped with a reason when
   faiss has no GPU support (faiss-cpu).
One JSON object is printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import torch


def training_throughput(device: str, smoke: bool) -> dict[str, Any]:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    if smoke:
        shape = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1024}
        batch, length = 2, 128
    else:
        shape = {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
                 "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 151936}
        batch, length = 8, 1024
    torch.manual_seed(0)
    config = Qwen3Config(**shape, max_position_embeddings=4096, tie_word_embeddings=True)
    model = Qwen3ForCausalLM(config).to(device)
    model.train()
    parameters = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device == "cuda")
    input_ids = torch.randint(0, shape["vocab_size"], (batch, length), device=device)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32

    def step() -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        with torch.autocast(device_type=device, dtype=dtype, enabled=device == "cuda"):
            loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - started

    for _ in range(2):
        step()
    seconds = statistics.median(step() for _ in range(5))
    result = {
        "parameters": parameters, "batch": batch, "sequence_length": length, "dtype": str(dtype).replace("torch.", ""),
        "step_seconds": round(seconds, 4), "tokens_per_second": round(batch * length / seconds, 1),
        "target_tokens_per_second": 10_000,
    }
    if device == "cuda":
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    result["ok"] = smoke or result["tokens_per_second"] >= 10_000
    return result


def faiss_search(smoke: bool) -> dict[str, Any]:
    try:
        import faiss
    except ImportError:
        return {"skipped": "faiss is not installed", "ok": True}
    import numpy as np

    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if gpus == 0 and not smoke:
        return {"skipped": "the installed faiss has no GPU support (faiss-cpu); install faiss-gpu to measure",
                "ok": True}
    vectors, queries, dimension, k = (20_000, 500, 64, 10) if smoke else (1_000_000, 10_000, 128, 10)
    rng = np.random.default_rng(0)
    base = rng.standard_normal((vectors, dimension), dtype=np.float32)
    query = rng.standard_normal((queries, dimension), dtype=np.float32)

    cpu_slice = max(vectors // 10, 1)
    cpu_index = faiss.IndexFlatL2(dimension)
    cpu_index.add(base[:cpu_slice])
    started = time.perf_counter()
    cpu_index.search(query, k)
    cpu_seconds = (time.perf_counter() - started) * (vectors / cpu_slice)  # flat search is linear in the index
    result: dict[str, Any] = {"vectors": vectors, "queries": queries, "dimension": dimension, "k": k,
                              "cpu_queries_per_second_full_index": round(queries / cpu_seconds, 1),
                              "target_speedup": 5.0}
    if gpus == 0:
        result.update({"gpu": "none (smoke run: CPU only)", "skipped": "no GPU: only the CPU path ran"})
        return result
    resources = faiss.StandardGpuResources()
    gpu_index = faiss.GpuIndexFlatL2(resources, dimension)
    gpu_index.add(base)
    gpu_index.search(query[:100], k)  # warm-up
    started = time.perf_counter()
    gpu_index.search(query, k)
    gpu_seconds = time.perf_counter() - started
    _, expected = cpu_index.search(query[:50], k)  # exactness check on the slice
    slice_index = faiss.GpuIndexFlatL2(resources, dimension)
    slice_index.add(base[:cpu_slice])
    _, got = slice_index.search(query[:50], k)
    speedup = cpu_seconds / gpu_seconds
    result.update({
        "gpus": gpus, "gpu_queries_per_second": round(queries / gpu_seconds, 1), "speedup": round(speedup, 1),
        "gpu_matches_cpu_top1": float((got[:, 0] == expected[:, 0]).mean()), "ok": speedup >= 5.0,
    })
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="Run the code on CPU with tiny sizes.")
    options = parser.parse_args()
    if not torch.cuda.is_available() and not options.smoke:
        # A skip is not a pass: no "ok" key, so nothing reads it as a measured success.
        print(json.dumps({"bench": "gpu", "skipped": "no CUDA device on this machine"}))
        return 0
    device = "cuda" if torch.cuda.is_available() else "cpu"
    report: dict[str, Any] = {"bench": "gpu", "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
                              "smoke": options.smoke, "torch": torch.__version__}
    report["training_step"] = training_throughput(device, options.smoke)
    report["faiss"] = faiss_search(options.smoke)
    if "ok" in report["faiss"] and device == "cuda":
        report["ok"] = bool(report["training_step"]["ok"] and report["faiss"]["ok"])
    else:
        report["skipped"] = "smoke run or no GPU: nothing measured on a GPU"
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
