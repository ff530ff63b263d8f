"""The `search_knowledge` tool that environments expose: hybrid search over a knowledge base, as text.

    from agentgym_knowledge.tool import make_search_tool
    env = ToolEnv(tasks=..., tools=[make_search_tool(), ...])          # the default clinical KB
    env = ToolEnv(tasks=..., tools=[make_search_tool("my_kb"), ...])   # the user's KB

The knowledge base is opened on the first call, so making an environment stays cheap. A result fits in what the
env shows of one tool output (`state.extra["output_limit"]`, else 8,000 characters): it holds whole passages,
says how many of the asked-for passages were left out, and how to page to them (`offset`); it is never cut in
the middle of a passage.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pydantic

from agentgym import Tool, ToolError, tool
from agentgym.tools import DEFAULT_OUTPUT_LIMIT
from agentgym_knowledge.kb import KnowledgeBase, Passage, QueryTruncatedWarning

MAX_RESULTS = 20
MAX_OFFSET = 200

_DEFAULT_SOURCES = (
    "drugs (what a medicine treats, its class, dose, monitoring), labs (what a test measures, LOINC code, "
    "units, reference range), conditions (summary, diagnosis, management, ICD-10-CM code), interactions "
    "(the risk of combining two drugs), dosing (dose rules by kidney function), units (unit conversion "
    "factors), icd10cm (ICD-10-CM code descriptions)"
)


def output_budget(state: Any) -> int:
    """Characters one tool output may take in this episode: the env's `output_limit`, which envs hand to their
    tools as `state.extra["output_limit"]` (FHIR-v0, ClinicalQA-v0); 8,000 when the state does not say."""
    extra = getattr(state, "extra", None)
    limit = extra.get("output_limit") if isinstance(extra, dict) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else DEFAULT_OUTPUT_LIMIT


def fit_blocks(notes: Sequence[str], blocks: Sequence[str], budget: int, how_to_page: Any) -> str:
    """`notes` then the most leading whole `blocks` (passages, already numbered) that fit in `budget`
    characters, joined by blank lines. When some are left out, a last note says how many and
    `how_to_page(shown)` says how to see them. A first block longer than the whole budget is the one thing cut
    (at a word, saying how much of it is shown), so a result always shows something."""

    def render(count: int, first: str | None = None) -> str:
        shown = [first if first is not None and index == 0 else block for index, block in enumerate(blocks[:count])]
        lines = [f"Note: {note}" for note in notes] + shown
        if count < len(blocks):
            left = len(blocks) - count
            lines.append(f"Note: {left} more matching passage{'s were' if left > 1 else ' was'} left out to keep "
                         f"this result under {budget:,} characters. {how_to_page(count)}")
        return "\n\n".join(lines)

    for count in range(len(blocks), 0, -1):
        text = render(count)
        if len(text) <= budget:
            return text
    if not blocks:
        return render(0)
    # Not even one whole passage fits: show the start of the first, cut at a word, and say so.
    # (At least 200 characters of it: a budget too small even for that is the env's to cut.)
    room = max(budget - len(render(1, "")) - 80, 200)
    head = blocks[0][:room].rsplit(" ", 1)[0]
    cut = f"{head} [passage cut: {len(head):,} of its {len(blocks[0]):,} characters shown]"
    return render(1, cut)


def render_passages(passages: list[Passage], notes: list[str], *, first_rank: int = 1,
                    budget: int = DEFAULT_OUTPUT_LIMIT, how_to_page: Any = None) -> str:
    """Number the passages (from `first_rank`) with id, source, title and whole text, after any notes (such as
    a truncated query), keeping whole passages within `budget` characters (`fit_blocks`)."""
    if not passages:
        return "\n\n".join([f"Note: {note}" for note in notes]
                             + ["No passage matched. Try other words, a broader query, or no source filter."])
    blocks = [f"[{number}] {passage.id} ({passage.source}){' ' + passage.title if passage.title else ''}\n"
              f"{passage.text}" for number, passage in enumerate(passages, start=first_rank)]
    return fit_blocks(notes, blocks, budget, how_to_page or (lambda shown: "Ask for fewer passages (k)."))


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
        state: Any,
        query: str,
        k: Annotated[int, pydantic.Field(ge=1, le=MAX_RESULTS)] = 5,
        source: str | None = None,
        offset: Annotated[int, pydantic.Field(ge=0, le=MAX_OFFSET)] = 0,
    ) -> str:
        """Search the medical knowledge base and return the best matching passages, best first, each whole.

        Args:
            query: What to look up, in plain words, for example "normal range of potassium" or "what does
                metformin treat".
            k: How many passages to return (1 to 20).
            source: Only search one source; leave empty to search all.
            offset: Skip this many of the best matches, to page to the ones after those already shown.
        """
        base = knowledge_base()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", QueryTruncatedWarning)
            try:
                passages = base.search(query, k=offset + k, source=source or None)[offset:]
            except ValueError as error:
                raise ToolError(str(error)) from error
        notes = [str(warning.message) for warning in caught if issubclass(warning.category, QueryTruncatedWarning)]

        def how_to_page(shown: int) -> str:
            return (f"To see them, call search_knowledge again with the same query and offset={offset + shown} "
                    "(and a k that fits).")

        return render_passages(passages, notes, first_rank=offset + 1, budget=output_budget(state),
                               how_to_page=how_to_page)

    search_knowledge.__doc__ = (search_knowledge.__doc__ or "").replace(
        "leave empty to search all.", f"leave empty to search all. Sources: {sources_text}."
    )
    # The env's own cut would fall mid-passage; this tool fits its output itself (`fit_blocks`).
    return tool(output_limit=0)(search_knowledge)
