"""code=True: Python blocks run in a real sandbox (the local backend) over a snapshot of the episode's records,
and writes queued there land in the episode's copy of the store, validated and patient-guarded."""

from __future__ import annotations

import os

import pytest
from agentgym_fhir.env import make_env
from agentgym_fhir.store import FhirStore

from agentgym.tasks import Task


def test_code_block_reads_and_writes(small_store: FhirStore, small_tasks: list[Task]) -> None:
    task = next(t for t in small_tasks if t.family == "potassium_replacement" and t.metadata["order_expected"]
                and not t.metadata["dated"])
    env = make_env(store=small_store, tasks=[task], knowledge=False, code=True, sandbox="local")
    try:
        env.reset(options={"task_id": task.id})
        code = ("obs = fhir.search('Observation', {'patient': fhir.patient_id, 'code': '2823-3', '_sort': '-date'})\n"
                "k = obs[0]['valueQuantity']['value']\nprint('K', k)")
        observation, *_ = env.step(f"```python\n{code}\n```")
        if "could not" in observation and "sandbox" in observation:
            if os.environ.get("CI"):  # the local sandbox runs wherever CI runs: not starting is a failure there
                pytest.fail(f"the local sandbox did not start under CI: {observation[:200]}")
            pytest.skip(f"no sandbox here: {observation[:200]}")
        assert f"K {task.answer:g}" in observation or f"K {task.answer}" in observation
        order = task.solution[1]["arguments"]["resource"]
        observation, *_ = env.step(f"```python\nfhir.create({order!r})\n```")
        assert "[created MedicationRequest/" in observation
        _, reward, terminated, _, _ = env.step({"name": "submit", "arguments": {"answer": task.answer}})
        assert terminated and reward == 1.0
    finally:
        env.close()


def test_garbage_in_the_write_queue_is_an_observation_not_a_crash(small_store: FhirStore,
                                                                     small_tasks: list[Task]) -> None:
    """A block that fills the write queue with non-JSON, a JSON object, or a link to a host file gets a clear
    note back; nothing is written, nothing of the linked file is echoed, and the episode goes on."""
    task = next(t for t in small_tasks if t.family == "record_vital")
    env = make_env(store=small_store, tasks=[task], knowledge=False, code=True, sandbox="local",
                   allow_weak_isolation=True)
    try:
        env.reset(options={"task_id": task.id})
        observations = [env.step(f"```python\n{code}\n```")[0] for code in (
            "open('fhir_writes.json', 'w').write('not json')",
            "open('fhir_writes.json', 'w').write('{\"resourceType\": \"Observation\"}')",
            "import os; os.symlink('/etc/passwd', 'fhir_writes.json')")]
        if any("could not" in o and "sandbox" in o for o in observations):
            if os.environ.get("CI"):
                pytest.fail(f"the local sandbox did not start under CI: {observations[0][:200]}")
            pytest.skip(f"no sandbox here: {observations[0][:200]}")
        assert "queued writes ignored" in observations[0] and "queued writes ignored" in observations[1]
        assert "root:" not in observations[2]
        _, reward, terminated, _, _ = env.step({"name": "submit", "arguments": {"answer": "done"}})
        assert terminated and reward == 0.0
    finally:
        env.close()


@pytest.mark.parametrize("allow", [False, True])
def test_allow_weak_isolation_reaches_the_sandbox(small_store: FhirStore, small_tasks: list[Task],
                                                  monkeypatch: pytest.MonkeyPatch, allow: bool) -> None:
    """gym.make("FHIR-v0", code=True, allow_weak_isolation=...) hands the choice to `Sandbox.create`. Which
    backend "auto" then picks depends on whether Docker answers on this machine, so the test records the call
    instead of starting one (the sandbox's own tests cover what the flag does)."""
    import gymnasium as gym

    from agentgym.sandbox import Sandbox, SandboxError

    seen: dict[str, object] = {}

    def record(**kwargs: object) -> Sandbox:
        seen.update(kwargs)
        raise SandboxError("recorded; not starting a sandbox in this test")

    monkeypatch.setattr(Sandbox, "create", staticmethod(record))
    task = small_tasks[0]
    env = gym.make("FHIR-v0", store=small_store, tasks=[task], knowledge=False, code=True, backend="auto",
                   allow_weak_isolation=allow)
    try:
        env.reset(options={"task_id": task.id})
        observation = env.step("```python\nprint(1)\n```")[0]
    finally:
        env.close()
    assert seen == {"backend": "auto", "allow_weak_isolation": allow}
    assert observation.startswith("Error") and "sandbox could not start" in observation
