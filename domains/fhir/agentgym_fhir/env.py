"""`FHIR-v0`: clinical tool-use tasks over FHIR R4 records, verified by execution.

`make_env` builds the env over the default generated population, a store the user gives (`store=PATH`, e.g.
one imported from Synthea), or a FHIR server (`server=URL`). Each episode works on its own copy-on-write
view of the store (`FhirStore.episode`), so its writes never reach another episode or the data on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym.env import ToolEnv
from agentgym.rewards import Score, verify
from agentgym.tasks import Task, TaskSet, load_tasks, save_tasks
from agentgym_fhir import verify as fhir_verify  # noqa: F401  (registers the fhir_* verifiers)
from agentgym_fhir.client import FhirClient
from agentgym_fhir.errors import FhirError
from agentgym_fhir.tools import FhirState, all_tools, parse_now

SYSTEM_PROMPT = (
    "You are a clinical assistant working in an electronic health record through FHIR R4 tools. Each task "
    "states today's date; treat it as now. Look facts up in the record rather than guessing, place orders "
    "only when the task calls for them, and write only to the patient the task is about. When done, call "
    "`submit` with the answer in the form the task asks for (a number with its unit, a date as YYYY-MM-DD, a "
    "code, a list, yes or no, or \"none found\")."
)
TASKS_VERSION = "1"


class ServerSession(FhirClient):
    """A FHIR server seen through the store's interface (read, search, create_resource, written).

    Creates are real POSTs, validated first: a server has no copy-on-write view, so an episode's writes stay on
    the server; the session remembers what it created so the verifier can inspect exactly those resources.
    """

    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        super().__init__(base_url, timeout=timeout)
        self._created: list[tuple[str, str]] = []

    def check_reachable(self) -> None:
        """Ask the server for its CapabilityStatement; raise `ConnectionError` naming the URL if it can't answer."""
        try:
            self.capabilities()
        except FhirError as error:
            raise ConnectionError(f"{error}; start one with `agentgym fhir serve STORE --port 8080` or check "
                                  "the URL") from error

    def create_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        from agentgym_fhir.validation import validate_resource

        validate_resource(resource)
        stored = super().create_resource(resource)
        self._created.append((stored["resourceType"], stored["id"]))
        return stored

    def written(self) -> list[dict[str, Any]]:
        return [self.read(kind, ident) for kind, ident in self._created]

    def iter_resources(self, resource_type: str | None = None) -> Any:
        """Every resource of a type, paging through the server's search."""
        types = [resource_type] if resource_type else ["Patient", "Encounter", "Condition", "Observation",
                                                        "MedicationRequest", "AllergyIntolerance", "Procedure"]
        for kind in types:
            yield from self.search_all(kind, {"_count": "500"}, max_pages=10_000)


class FhirEnv(ToolEnv):
    """The FHIR-v0 environment: `ToolEnv` plus a per-episode copy of the store and the task's fixed now."""

    def __init__(self, tasks: Any, *, store: Any = None, server: ServerSession | None = None, kb: Any = None,
                 knowledge: bool = True, judge: dict[str, Any] | str | None = None, sandbox: str | None = None,
                 **kwargs: Any) -> None:
        self.store = store
        self.server = server
        self.judge = judge
        self.sandbox_backend = sandbox
        self._sandbox: Any = None
        super().__init__(tasks, all_tools(kb=kb, knowledge=knowledge), system_prompt=SYSTEM_PROMPT, **kwargs)

    def begin_episode(self, task: Task) -> FhirState:
        backend: Any
        if self.server is not None:
            backend = ServerSession(self.server.base_url)
        else:
            backend = self.store.episode(now=task.metadata.get("now"), id_prefix=f"{task.id}:")
        return FhirState(backend=backend, patient_id=task.metadata.get("patient_id"),
                         now=parse_now(task.metadata.get("now")))

    def end_episode(self, state: Any) -> None:
        if isinstance(state, FhirState):
            state.backend.close()

    def verify(self, task: Task, submission: Any, state: Any) -> Score:
        if self.judge is not None and task.verifier.name == "fhir_answer" and task.verifier.params.get("kind") == "text":
            from agentgym_fhir.verify import ask_judge, judge_config

            config = judge_config(self.judge)
            if config is not None:
                return ask_judge(config, task.prompt, task.answer, submission)
        return verify(task, submission, state)

    def execute_code(self, code: str, state: Any) -> str:
        from agentgym_fhir.codeact import run_code

        if self._sandbox is None:
            from agentgym.sandbox import Sandbox

            self._sandbox = Sandbox.create(backend=self.sandbox_backend or os.environ.get("AGENTGYM_SANDBOX", "auto"))
        return run_code(self._sandbox, state, code)

    def close(self) -> None:
        super().close()
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self.server is not None:
            self.server.close()


def _store_key(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def cached_tasks(store: Any, seed: int, options: dict[str, Any] | None = None) -> list[Task]:
    """The generated tasks for a store file, built once and kept next to the default store cache."""
    from agentgym_fhir.data import cache_dir
    from agentgym_fhir.tasks import generate

    options = dict(options or {})
    path = Path(store.path)
    key = _store_key(path) + hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()[:8]
    target = cache_dir() / f"tasks-v{TASKS_VERSION}-{path.stem}-{key}-s{seed}.jsonl"
    if target.is_file():
        return load_tasks(target)
    tasks = generate(seed=seed, store=store, **options)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")
    save_tasks(tasks, partial)
    os.replace(partial, target)
    return tasks


def open_store(store: Any = None, *, patients: int | None = None, seed: int = 0) -> Any:
    """A `FhirStore` from a path, an open store, or (None) the default generated population."""
    from agentgym_fhir.store import FhirStore

    if store is None:
        from agentgym_fhir.data import DEFAULT_PATIENTS, default_store

        return default_store(patients or DEFAULT_PATIENTS, seed)
    if isinstance(store, FhirStore):
        return store
    path = Path(store)
    if path.is_dir():
        candidates = sorted(path.glob("*.sqlite")) + sorted(path.glob("*.db"))
        if not candidates:
            raise FileNotFoundError(f"{path} holds no store file (*.sqlite); make one with `agentgym fhir generate` "
                                    "or `agentgym fhir import`")
        path = candidates[0]
    if not path.exists():
        raise FileNotFoundError(f"no FHIR store at {path}; make one with `agentgym fhir generate --out {path}` or "
                                "`agentgym fhir import SRC --out STORE`")
    return FhirStore.open(path, readonly=True)


def make_env(*, store: Any = None, server: str | None = None, tasks: Any = None,
             families: Sequence[str] | None = None, split: str | None = None, code: bool = False,
             patients: int | None = None, seed: int = 0, kb: Any = None, knowledge: bool = True,
             judge: dict[str, Any] | str | None = None, sandbox: str | None = None,
             task_options: dict[str, Any] | None = None, **kwargs: Any) -> FhirEnv:
    """Build FHIR-v0.

    Args:
        store: A store path (file or folder) or open `FhirStore`; default: the generated population.
        server: A FHIR server base URL instead of a store (tasks from `tasks=`, or generated by reading it).
        tasks: A task file or list; default: generated from the data (cached per store).
        families: Keep only these task families.
        split: "train" or "test" (split by patient).
        code: Accept ```python blocks, run in a sandbox with a FHIR client over the episode's records.
        patients: Size of the default population (when no store is given).
        seed: Seed of the default population and of task generation.
        kb: A knowledge base (path or object) for `search_knowledge`; default: the built-in one.
        knowledge: Offer `search_knowledge` at all.
        judge: An OpenAI-compatible judge ({"base_url", "model", "api_key"}) for free-text answers; off by
            default.
        sandbox: Sandbox backend for code=True ("docker", "local", "auto").
        task_options: Options passed to the task generator (e.g. {"per_family": 300}).
        **kwargs: `ToolEnv` options (max_turns, reward_weights, output_limit...).
    """
    session = ServerSession(server) if server else None
    if session is not None:
        session.check_reachable()
    data = None if session is not None else open_store(store, patients=patients, seed=seed)
    if tasks is None:
        if session is not None:
            from agentgym_fhir.tasks import generate

            tasks = generate(seed=seed, store=session, **(task_options or {}))
        else:
            tasks = cached_tasks(data, seed, task_options)
    task_set = TaskSet.coerce(tasks)
    return FhirEnv(task_set, store=data, server=session, kb=kb, knowledge=knowledge, judge=judge, sandbox=sandbox,
                   families=families, split=split, code=code, **kwargs)
