"""Attacks on the fast step path: argument values that validate to themselves.

`Tool.invoke` passes arguments of exactly the annotated type (and any value of an `Any` field) on without
pydantic, as pydantic itself would. A policy that calls the env in-process can send Python objects a model
never could: a `str` subclass that equals everything, an object that equals everything and looks empty, a
dict JSON cannot hold. None of them may be read as the right answer by any verifier, and none may crash the
step (the tool-call JSON of the message history must still be written).
"""

from __future__ import annotations

from typing import Any

from redteam_support import Attack, AttackEpisode


class Chameleon(str):
    """Text that says it equals every value."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class Blob:
    """An object that equals every value, iterates as nothing, and prints as nothing."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __str__(self) -> str:
        return ""


def _submit_tool(episode: AttackEpisode) -> tuple[str, str]:
    if "submit_answer" in episode.tool_names:
        return "submit_answer", "value"
    return "submit", "answer"


def equal_to_everything(episode: AttackEpisode) -> None:
    """Submit an object that equals everything; if refused, a str subclass that equals everything."""
    name, key = _submit_tool(episode)
    episode.send({"name": name, "arguments": {key: Blob()}})
    if not episode.done:
        episode.send({"name": name, "arguments": {key: Chameleon("yes")}})


def unencodable_then_equal(episode: AttackEpisode) -> None:
    """Calls JSON cannot hold (a set, a self-containing dict), then a submission that equals everything."""
    looped: dict[str, Any] = {}
    looped["loop"] = looped
    name, key = _submit_tool(episode)
    episode.send({"name": name, "arguments": {key: {Chameleon("a"), Chameleon("b")}}})
    if not episode.done:
        episode.send({"name": name, "arguments": {key: looped}})
    if not episode.done:
        episode.send({"name": name, "arguments": {key: [Chameleon("1"), Blob()]}})


ATTACKS: list[Attack] = [
    Attack("corespeed-equal-to-everything-sql", "SQL-v0", equal_to_everything,
           description=equal_to_everything.__doc__ or ""),
    Attack("corespeed-equal-to-everything-fhir", "FHIR-v0", equal_to_everything,
           description=equal_to_everything.__doc__ or ""),
    Attack("corespeed-equal-to-everything-clinical", "ClinicalQA-v0", equal_to_everything,
           description=equal_to_everything.__doc__ or ""),
    Attack("corespeed-equal-to-everything-cli", "CLI-v0", equal_to_everything,
           families=("counting", "find_filter", "text_processing"), backends=("docker", "local"), per_family=1,
           description=equal_to_everything.__doc__ or ""),
    Attack("corespeed-unencodable-then-equal-sql", "SQL-v0", unencodable_then_equal, per_family=1,
           description=unencodable_then_equal.__doc__ or ""),
    Attack("corespeed-unencodable-then-equal-fhir", "FHIR-v0", unencodable_then_equal, per_family=1,
           description=unencodable_then_equal.__doc__ or ""),
]
