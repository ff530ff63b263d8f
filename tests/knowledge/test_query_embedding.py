"""Queries are embedded by a direct forward pass (faster than `encode`); it must give `encode`'s vectors."""

from __future__ import annotations

import numpy as np
from agentgym_knowledge import SentenceTransformerEmbedder


def test_direct_query_path_matches_encode(embedder: SentenceTransformerEmbedder) -> None:
    queries = ["normal serum potassium range", "metformin and kidney function in older adults with CKD stage 3"]
    direct = embedder.encode(queries)  # a few texts: the single-thread query path
    assert embedder._direct_ok is True  # the shipped model has the plain mean-pooled layout
    reference = embedder.model.encode(queries, convert_to_numpy=True, normalize_embeddings=True,
                                      show_progress_bar=False)
    assert direct.shape == (2, embedder.dimension) and direct.dtype == np.float32
    np.testing.assert_allclose(direct, reference, atol=1e-5)  # padding of the shorter query changes nothing
    np.testing.assert_allclose(np.linalg.norm(direct, axis=1), 1.0, atol=1e-5)
