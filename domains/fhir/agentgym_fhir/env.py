"""`FHIR-v0`: clinical tool-use tasks over FHIR R4 records, verified by execution.

`make_env` builds the env over the default generated population, a store the user gives (`store=PATH`, e.g.
one imported from Synthea), or a FHIR server (`server=URL`). Each episode works on its own copy-on-write
view of the store (`FhirStore.episode`), or, against a server, keeps its writes in its session
(`ServerSession`), so its writes never reach another episode, the data on disk or the server.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentgym.diagnosis import TurnRecord
from agentgym.env import ToolEnv
from agentgym.rewards import Score, verify
from agentgym.tasks import Task, TaskSet, load_tasks, save_tasks
from agentgym.tools import ToolError
from agentgym_fhir import verify as fhir_verify  # noqa: F401  (registers the fhir_* verifiers)
from agentgym_fhir.client import FhirClient
from agentgym_fhir.diagnosis import fhir_labels
from agentgym_fhir.errors import FhirError
from agentgym_fhir.tools import FhirState, all_tools, parse_now

SYSTEM_PROMPT = (
    "You are a clinical assistant working in an electronic health record through FHIR R4 tools. Each task "
    "states today's date; treat it as now. Look facts up in the record rather than guessing, place orders "
    "only when the task calls for them, and write only to the patient the task is about. When done, call "
    "`submit` with the answer in the form the task asks for (a number with its unit, a date as YYYY-MM-DD, a "
    "code, a list, yes or no, or \"none found\")."
)
TASKS_VERSION = "4"
# The cached task sets depend on the code that builds them: any change to these files is a new cache key.
GENERATOR_SOURCES = ("tasks", "vocab", "codes.py", "calculators.py", "units.py", "tools.py")


class ServerSession(FhirClient):
    """A FHIR server seen through the store's interface (read, search, create_resource, written).

    The server is shared by every episode (and by anyone else who uses it), and a FHIR server offers no
    copy-on-write view, so an episode's writes never reach it: they are validated, given an id and kept in the
    session, where reads by id and the verifier see them, and they vanish with the session. No episode can
    change what another episode reads or is graded against, even when it crashes before `close`. Searches show
    the server's data only (the episode's own writes are not merged into search results).
    """

    def __init__(self, base_url: str, *, timeout: float = 30.0, id_prefix: str = "", now: str | None = None) -> None:
        # Strict search handling, as the env's own store gives: an unknown parameter is an error the agent
        # learns from, not a silently wider search (FHIR servers ignore unknown parameters by default).
        super().__init__(base_url, timeout=timeout, headers={"Prefer": "handling=strict"})
        self._id_prefix = id_prefix
        self._now = now
        self._held: dict[tuple[str, str], dict[str, Any]] = {}

    def check_reachable(self) -> None:
        """Ask the server for its CapabilityStatement; raise `ConnectionError` naming the URL if it can't answer."""
        try:
            self.capabilities()
        except FhirError as error:
            raise ConnectionError(f"{error}; start one with `agentgym fhir serve STORE --port 8080` or check "
                                  "the URL") from error

    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        held = self._held.get((resource_type, resource_id))
        return copy.deepcopy(held) if held is not None else super().read(resource_type, resource_id)

    def create_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        """Validate `resource` and keep it in this session (never POSTed: see the class docstring)."""
        from agentgym_fhir.validation import validate_resource

        validate_resource(resource)
        new_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgym-server-episode:{self._id_prefix}{len(self._held) + 1}"))
        stamped = self._now or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        stored = {**copy.deepcopy(resource), "id": new_id, "meta": {"versionId": "1", "lastUpdated": stamped}}
        self._held[(stored["resourceType"], new_id)] = stored
        return copy.deepcopy(stored)

    def update_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        raise FhirError("updates are not offered in an episode against a shared FHIR server; create a new "
                        "resource instead", 405, "not-supported")

    def written(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(resource) for resource in self._held.values()]

    def close(self) -> None:
        self._held.clear()

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
                 allow_weak_isolation: bool = False, **kwargs: Any) -> None:
        self.store = store
        self.server = server
        self.judge = judge
        self.sandbox_backend = sandbox
        self.allow_weak_isolation = allow_weak_isolation
        self._sandbox: Any = None
        super().__init__(tasks, all_tools(kb=kb, knowledge=knowledge), system_prompt=SYSTEM_PROMPT, **kwargs)

    def begin_episode(self, task: Task) -> FhirState:
        backend: Any
        if self.server is not None:
            backend = ServerSession(self.server.base_url, id_prefix=f"{task.id}:", now=task.metadata.get("now"))
        else:
            backend = self.store.episode(now=task.metadata.get("now"), id_prefix=f"{task.id}:")
        return FhirState(backend=backend, patient_id=task.metadata.get("patient_id"),
                         now=parse_now(task.metadata.get("now")), extra={"output_limit": self.output_limit})

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

    def diagnose_extra(self, turns: Sequence[TurnRecord], score: Score) -> list[str]:
        """FHIR-v0's diagnosis labels (`agentgym_fhir.diagnosis`, docs/diagnosis.md)."""
        assert self.task is not None
        return fhir_labels(self.task, self.state, turns, score)

    def feedback_hints(self, call: Any, outcome: Any, view: Any) -> list[Any]:
        """FHIR-v0's hints (`agentgym_fhir.feedback`, docs/feedback.md): never a gold resource id or value."""
        from agentgym_fhir.feedback import hints

        return hints(call, outcome, view)

    def execute_code(self, code: str, state: Any) -> str:
        from agentgym_fhir.codeact import run_code

        if self._sandbox is None:
            from agentgym.sandbox import Sandbox, SandboxError

            backend = self.sandbox_backend or os.environ.get("AGENTGYM_SANDBOX", "auto")
            try:
                self._sandbox = Sandbox.create(backend=backend, allow_weak_isolation=self.allow_weak_isolation)
            except SandboxError as error:
                raise ToolError(f"the sandbox could not start, so code blocks cannot run ({error}); call the tools "
                                "instead") from None
        return run_code(self._sandbox, state, code)

    def close(self) -> None:
        super().close()
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self.server is not None:
            self.server.close()


def generator_version() -> str:
    """A digest of the task generator's source (`GENERATOR_SOURCES`) as this process imported it, so a changed
    generator never reads task files cached by an older one, and a process that imported an older generator
    never files its tasks under the newer one's key."""
    from agentgym_fhir.tasks import GENERATOR_DIGEST

    return GENERATOR_DIGEST


def source_digest() -> str:
    """A digest of the files in `GENERATOR_SOURCES`, read now."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(TASKS_VERSION.encode())
    for name in GENERATOR_SOURCES:
        target = package / name
        files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
        for source in files:
            digest.update(str(source.relative_to(package)).encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:12]


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
    target = cache_dir() / f"tasks-v{TASKS_VERSION}-{generator_version()}-{path.stem}-{key}-s{seed}.jsonl"
    if target.is_file():
        return load_tasks(target)
    from agentgym.cache import building

    with building(f"the FHIR-v0 task set of {path.name}", target, estimate="about 60-120 s"):
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
             judge: dict[str, Any] | str | None = None, sandbox: str | None = None, backend: str | None = None,
             allow_weak_isolation: bool = False, task_options: dict[str, Any] | None = None,
             **kwargs: Any) -> FhirEnv:
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
        sandbox: Sandbox backend for code=True ("docker", "local", "auto"); `backend` is the same option under
            the name the other envs use.
        allow_weak_isolation: Let code=True run in the local backend when "auto" finds no Docker (its isolation
            is weaker: the code runs as this user on this machine); off by default.
        task_options: Options passed to the task generator (e.g. {"per_family": 300}).
        **kwargs: `ToolEnv` options (max_turns, reward_weights, output_limit...).
    """
    if sandbox and backend and sandbox != backend:
        raise ValueError(f"sandbox={sandbox!r} and backend={backend!r} disagree; give one of them")
    sandbox = sandbox or backend
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
                   allow_weak_isolation=allow_weak_isolation, families=families, split=split, code=code, **kwargs)
