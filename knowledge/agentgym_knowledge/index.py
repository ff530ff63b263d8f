"""FAISS vector indexes: choosing, building, saving, loading (memory-mapped) and searching.

- `flat`: exact inner product (IndexFlatIP), for corpora under `HNSW_THRESHOLD` vectors.
- `hnsw`: a graph index (IndexHNSWFlat, inner product), fast and near-exact, up to `IVFPQ_THRESHOLD` vectors.
- `ivfpq`: inverted lists with product-quantised codes (48 bytes a vector), for large corpora in little memory;
  candidates are re-ranked exactly with the full vectors, read from the memory-mapped `vectors.npy`.

When `faiss` sees a GPU, flat and IVF-PQ indexes are copied to it for unfiltered searches; HNSW has no GPU
form in FAISS and stays on the CPU. Results are the same either way (up to float rounding).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import faiss
import numpy as np

HNSW_THRESHOLD = 50_000
IVFPQ_THRESHOLD = 500_000
INDEX_TYPES = ("auto", "flat", "hnsw", "ivfpq")
HNSW_NEIGHBOURS = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128
PQ_BYTES = 48
IVF_NPROBE = 32
RERANK_FACTOR = 8


def choose_index_type(count: int, requested: str = "auto") -> str:
    """The index type for `count` vectors: `requested` unless "auto", else by the size thresholds."""
    if requested not in INDEX_TYPES:
        raise ValueError(f"unknown index type {requested!r}; choose one of {', '.join(INDEX_TYPES)}")
    if requested != "auto":
        return requested
    if count < HNSW_THRESHOLD:
        return "flat"
    if count < IVFPQ_THRESHOLD:
        return "hnsw"
    return "ivfpq"


def gpu_count() -> int:
    """How many GPUs this faiss build can use (0 for faiss-cpu)."""
    counter = getattr(faiss, "get_num_gpus", None)
    return int(counter()) if counter is not None else 0


def build_index(vectors: np.ndarray, index_type: str, *, seed: int = 0) -> tuple[faiss.Index, dict[str, Any]]:
    """Build a CPU index of the given type over unit vectors; returns the index and its parameters."""
    count, dimension = vectors.shape
    if index_type == "flat":
        index: faiss.Index = faiss.IndexFlatIP(dimension)
        index.add(vectors)
        return index, {"type": "flat"}
    if index_type == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = HNSW_EF_SEARCH
        index.add(vectors)
        return index, {"type": "hnsw", "M": HNSW_NEIGHBOURS, "efConstruction": HNSW_EF_CONSTRUCTION,
                       "efSearch": HNSW_EF_SEARCH}
    if index_type == "ivfpq":
        lists = max(1, min(int(math.sqrt(count)), count // 39, 16384))  # sqrt(N): k-means stays cheap on a CPU
        pq_bytes = PQ_BYTES if dimension % PQ_BYTES == 0 else _largest_divisor(dimension, PQ_BYTES)
        bits = 8 if count >= 256 * 39 else max(1, int(math.log2(max(2, count // 39))))
        quantizer = faiss.IndexFlatIP(dimension)
        index = faiss.IndexIVFPQ(quantizer, dimension, lists, pq_bytes, bits, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(seed)
        sample_size = min(count, max(lists * 39, 256 * 39, 65_536))
        sample = vectors[np.sort(rng.choice(count, size=sample_size, replace=False))] if sample_size < count \
            else np.asarray(vectors)
        index.train(np.ascontiguousarray(sample, dtype=np.float32))
        for start in range(0, count, 100_000):
            index.add(np.ascontiguousarray(vectors[start : start + 100_000], dtype=np.float32))
        index.nprobe = min(IVF_NPROBE, lists)
        return index, {"type": "ivfpq", "lists": lists, "pq_bytes": pq_bytes, "bits": bits,
                       "nprobe": index.nprobe, "rerank_factor": RERANK_FACTOR}
    raise ValueError(f"unknown index type {index_type!r}; choose one of {', '.join(INDEX_TYPES[1:])}")


def _largest_divisor(number: int, at_most: int) -> int:
    return max(d for d in range(1, at_most + 1) if number % d == 0)


def save_index(index: faiss.Index, path: Path) -> None:
    """Write the index to `path` (through a temporary file, so a crash never leaves half an index)."""
    temporary = path.with_suffix(path.suffix + ".tmp")
    faiss.write_index(index, str(temporary))
    temporary.replace(path)


def load_index(path: Path, parameters: dict[str, Any]) -> faiss.Index:
    """Read an index, memory-mapping it where this faiss version allows, and restore its search parameters."""
    try:
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    except RuntimeError:
        index = faiss.read_index(str(path))  # index types without mmap support are read into memory
    if parameters.get("type") == "hnsw":
        faiss.downcast_index(index).hnsw.efSearch = int(parameters.get("efSearch", HNSW_EF_SEARCH))
    elif parameters.get("type") == "ivfpq":
        faiss.extract_index_ivf(index).nprobe = int(parameters.get("nprobe", IVF_NPROBE))
    return index


class VectorIndex:
    """A loaded FAISS index plus the memory-mapped vectors, with optional GPU copy and source filtering.

    `search(query_vectors, k, allowed=None)` returns (scores, positions) where positions index `vectors.npy`
    (-1 for no result). `allowed` is a sorted array of positions the results must come from.
    """

    def __init__(self, index: faiss.Index, vectors: np.ndarray, parameters: dict[str, Any],
                 *, use_gpu: bool | None = None) -> None:
        self.cpu_index = index
        self.vectors = vectors
        self.parameters = parameters
        self.kind = str(parameters.get("type", "flat"))
        self.gpu_index: faiss.Index | None = None
        wants_gpu = gpu_count() > 0 if use_gpu is None else use_gpu
        if wants_gpu and self.kind in ("flat", "ivfpq") and gpu_count() > 0:
            self.gpu_index = faiss.index_cpu_to_all_gpus(index)

    @property
    def device(self) -> str:
        """"gpu" when unfiltered searches run on a GPU copy of the index, else "cpu"."""
        return "gpu" if self.gpu_index is not None else "cpu"

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k inner-product search for each query row, limited to `allowed` positions when given."""
        total = self.cpu_index.ntotal
        k = max(1, min(k, total))
        fetch = k * int(self.parameters.get("rerank_factor", 1)) if self.kind == "ivfpq" else k
        fetch = min(fetch, total)
        if allowed is not None:
            if len(allowed) == 0:
                return np.full((len(query), k), -np.inf, dtype=np.float32), np.full((len(query), k), -1)
            selector = faiss.IDSelectorBatch(allowed.astype(np.int64))
            parameters = self._search_parameters(selector)
            scores, positions = self.cpu_index.search(query, fetch, params=parameters)
        elif self.gpu_index is not None:
            scores, positions = self.gpu_index.search(query, fetch)
        else:
            scores, positions = self.cpu_index.search(query, fetch)
        if self.kind == "ivfpq":
            scores, positions = self._rerank(query, positions, k)
        return scores, positions

    def _search_parameters(self, selector: faiss.IDSelector) -> faiss.SearchParameters:
        if self.kind == "hnsw":
            return faiss.SearchParametersHNSW(sel=selector, efSearch=int(self.parameters.get("efSearch",
                                                                                               HNSW_EF_SEARCH)))
        if self.kind == "ivfpq":
            return faiss.SearchParametersIVF(sel=selector, nprobe=int(self.parameters.get("nprobe", IVF_NPROBE)))
        return faiss.SearchParameters(sel=selector)

    def _rerank(self, query: np.ndarray, positions: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores for the compressed index's candidates, from the memory-mapped full vectors."""
        out_scores = np.full((len(query), k), -np.inf, dtype=np.float32)
        out_positions = np.full((len(query), k), -1, dtype=np.int64)
        for row, candidates in enumerate(positions):
            candidates = candidates[candidates >= 0]
            if len(candidates) == 0:
                continue
            order = np.argsort(candidates)  # sorted reads are kinder to a memory-mapped file
            exact = np.asarray(self.vectors[candidates[order]], dtype=np.float32) @ query[row]
            best = np.argsort(-exact)[:k]
            out_scores[row, : len(best)] = exact[best]
            out_positions[row, : len(best)] = candidates[order][best]
        return out_scores, out_positions
