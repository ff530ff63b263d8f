"""Fixtures for the knowledge-base tests: the shipped embedder (loaded once) and a small corpus we wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agentgym_knowledge import KnowledgeBase, SentenceTransformerEmbedder

# Our own short passages: two sources, distinct topics, one rare keyword ("zorblax") only BM25 can key on.
PASSAGES: list[dict[str, str]] = [
    {"id": "p-asthma", "source": "lungs", "title": "Asthma",
     "text": "Asthma narrows the airways and causes wheezing, chest tightness and shortness of breath. Inhaled "
             "corticosteroids reduce airway inflammation and prevent attacks."},
    {"id": "p-copd", "source": "lungs", "title": "COPD",
     "text": "Chronic obstructive pulmonary disease is a long-term lung disease, mostly caused by smoking, that "
             "makes it hard to breathe out. Spirometry confirms it."},
    {"id": "p-pneumonia", "source": "lungs", "title": "Pneumonia",
     "text": "Pneumonia is an infection of the lungs that fills air sacs with fluid, causing fever, cough and "
             "difficulty breathing. Antibiotics treat bacterial pneumonia."},
    {"id": "p-hypertension", "source": "heart", "title": "High blood pressure",
     "text": "Hypertension means the force of blood against artery walls stays too high. It raises the risk of "
             "stroke and heart attack. Salt reduction and ACE inhibitors lower it."},
    {"id": "p-afib", "source": "heart", "title": "Atrial fibrillation",
     "text": "Atrial fibrillation is an irregular and often rapid heart rhythm. Blood can pool in the atria and "
             "form clots, so anticoagulants are used to prevent stroke."},
    {"id": "p-heart-failure", "source": "heart", "title": "Heart failure",
     "text": "In heart failure the heart cannot pump enough blood. Fluid builds up in the legs and lungs; "
             "diuretics such as furosemide remove the extra fluid."},
    {"id": "p-diabetes", "source": "metabolism", "title": "Type 2 diabetes",
     "text": "Type 2 diabetes is high blood sugar caused by insulin resistance. Metformin is usually the first "
             "medicine, together with diet and exercise."},
    {"id": "p-thyroid", "source": "metabolism", "title": "Hypothyroidism",
     "text": "An underactive thyroid makes too little hormone, leading to tiredness, weight gain and feeling "
             "cold. Levothyroxine tablets replace the missing hormone."},
    {"id": "p-gout", "source": "metabolism", "title": "Gout",
     "text": "Gout is a painful arthritis caused by uric acid crystals in a joint, often the big toe. "
             "Allopurinol lowers uric acid to prevent flares."},
    {"id": "p-zorblax", "source": "metabolism", "title": "A fictional enzyme",
     "text": "The zorblax enzyme is an invented protein used in this test; its only role is to be found by an "
             "exact keyword."},
    {"id": "p-migraine", "source": "brain", "title": "Migraine",
     "text": "Migraine is a recurring headache, often on one side, with nausea and sensitivity to light. "
             "Triptans can stop an attack."},
    {"id": "p-stroke", "source": "brain", "title": "Stroke",
     "text": "A stroke happens when blood flow to part of the brain is blocked or a vessel bursts. Sudden face "
             "drooping, arm weakness and slurred speech are warning signs."},
]


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The shipped all-MiniLM-L6-v2 model, loaded once for every test."""
    model = SentenceTransformerEmbedder()
    model.encode(["warm up"])
    return model


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "medical.jsonl", PASSAGES)


@pytest.fixture(scope="session")
def small_kb(tmp_path_factory: pytest.TempPathFactory, corpus_file: Path,
             embedder: SentenceTransformerEmbedder) -> KnowledgeBase:
    return KnowledgeBase.build(corpus_file, tmp_path_factory.mktemp("kb") / "kb", embedder=embedder)


class CountingEmbedder:
    """Wraps the real embedder, counting encoded texts and optionally failing after some calls.

    Used to interrupt a build part way, the way a crash or Ctrl-C would, at a known point.
    """

    def __init__(self, inner: SentenceTransformerEmbedder, fail_after_calls: int | None = None) -> None:
        self.inner = inner
        self.fail_after_calls = fail_after_calls
        self.calls = 0
        self.encoded = 0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        if self.fail_after_calls is not None and self.calls >= self.fail_after_calls:
            raise KeyboardInterrupt("simulated interruption")
        self.calls += 1
        self.encoded += len(texts)
        return self.inner.encode(texts, batch_size)
