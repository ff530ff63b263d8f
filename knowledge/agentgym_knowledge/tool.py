"""The `search_knowledge` tool that environments expose: hybrid search over a knowledge base, as text.

    from agentgym_knowledge.tool import make_search_tool
    env = ToolEnv(tasks=..., tools=[make_search_tool(), ...])          # the default clinical KB
    env = ToolEnv(tasks=..., tools=[make_search_tool("my_kb"), ...])   # the user's KB

The knowledge base is opened on the first call, so making an environment stays cheap.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Annotated

import pydantic

from agentgym import Tool, ToolError, tool
from agentgym_knowledge.kb import KnowledgeBase, Passage, QueryTruncatedWarning

MAX_RESULTS = 20
PASSAGE_CHARS = 1200  # per passage shown to the agent; whole passages would crowd the context

_DEFAULT_SOURCES = (
    "drugs (what a medicine treats, its class, dose, monitoring), labs (what a test measures, LOINC code, "
    "units, reference range), conditions (summary, diagnosis, management, ICD-10-CM code), interactions "
    "(the risk of combining two drugs), icd10cm (ICD-10-CM code descriptions)"
)


def render_passages(passages: list[Passage], notes: list[str]) -> str:
    """Number the passages with id, source, title and text, after any notes (such as a truncated query)."""
    lines = [f"Note: {note}" for note in notes]
    if not passages:
        lines.append("No passage matched. Try other words, a broader query, or no source filter.")
    for number, passage in enumerate(passages, start=1):
        text = passage.text if len(passage.text) <= PASSAGE_CHARS else passage.text[:PASSAGE_CHARS] + " [...]"
        title = f" {passage.title}" if passage.title else ""
        lines.append(f"[{number}] {passage.id} ({passage.source}){title}\n{text}")
    return "\n\n".join(lines)


_shared: dict[str, KnowledgeBase] = {}
_shared_lock = threading.Lock()


def shared_knowledge_base(kb: str | Path | None = None) -> KnowledgeBase:
    """The knowledge base at `kb` (None: the default clinical one), loaded once per process.

    Every env's `search_knowledge` tool shares it, so a thousand envs hold one copy of the model and index
    (`KnowledgeBase.search` is thread-safe).
    """
    key = "default" if kb is None else str(Path(kb).resolve())
    with _shared_lock:
        loaded = _shared.get(key)
        if loaded is None:
            if kb is None:
                from agentgym_knowledge.default import default_knowledge_base

                loaded = default_knowledge_base()
            else:
                loaded = KnowledgeBase.load(kb)
            _shared[key] = loaded
        return loaded


def make_search_tool(kb: KnowledgeBase | str | Path | None = None) -> Tool:
    """A `search_knowledge` tool over `kb`: a loaded KnowledgeBase, the path of one, or None for the default.

    The default is the cached clinical knowledge base (`default.py`), built on the first call if needed.
    """

    def knowledge_base() -> KnowledgeBase:
        return kb if isinstance(kb, KnowledgeBase) else shared_knowledge_base(kb)

    if kb is None:
        sources_text = _DEFAULT_SOURCES
    elif isinstance(kb, KnowledgeBase):
        sources_text = ", ".join(sorted(kb.manifest["sources"]))
    else:
        sources_text = "see the knowledge base's sources"

    def search_knowledge(
        query: str,
        k: Annotated[int, pydantic.Field(ge=1, le=MAX_RESULTS)] = 5,
        source: str | None = None,
    ) -> str:
        """Search the medical knowledge base and return the best matching passages, best first.

        Args:
            query: What to look up, in plain words, for example "normal range of potassium" or "what does
                metformin treat".
            k: How many passages to return (1 to 20).
            source: Only search one source; leave empty to search all.
        """
        base = knowledge_base()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", QueryTruncatedWarning)
            try:
                passages = base.search(query, k=k, source=source or None)
            except ValueError as error:
                raise ToolError(str(error)) from error
        notes = [str(warning.message) for warning in caught if issubclass(warning.category, QueryTruncatedWarning)]
        return render_passages(passages, notes)

    search_knowledge.__doc__ = (search_knowledge.__doc__ or "").replace(
        "leave empty to search all.", f"leave empty to search all. Sources: {sources_text}."
    )
    return tool(search_knowledge)
