"""agentgym-knowledge: knowledge bases for agents, with hybrid dense (FAISS) and BM25 (SQLite FTS5) search.

    from agentgym_knowledge import KnowledgeBase
    kb = KnowledgeBase.build(["corpus.jsonl"], "my_kb")
    kb = KnowledgeBase.load("my_kb")
    for passage in kb.search("first-line treatment of hypertension", k=5):
        print(passage.id, passage.score, passage.text[:80])
"""

from agentgym_knowledge.embedder import Embedder, EmbedderError, SentenceTransformerEmbedder
from agentgym_knowledge.kb import (
    BuildReport,
    EmbedderMismatchError,
    KnowledgeBase,
    KnowledgeBaseError,
    Passage,
    QueryTruncatedWarning,
)
from agentgym_knowledge.readers import EmptyCorpusError

__all__ = [
    "BuildReport",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "EmptyCorpusError",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "Passage",
    "QueryTruncatedWarning",
    "SentenceTransformerEmbedder",
]
