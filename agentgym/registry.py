"""Environment registration and plugin discovery.

Plugins (the built-in domains included) declare a zero-argument callable in the `agentgym.envs` entry-point
group; it calls `agentgym.register(...)`. `load_plugins()` runs them all once, recording which distribution
registered each env and which plugins failed (shown by `agentgym list`, never silently dropped).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import gymnasium as gym

# Options `EnvFactory` takes for every env, before the env's own arguments.
FACTORY_OPTIONS = ("perturb", "perturb_seed", "perturb_rate", "remote", "remote_token")
ENV_GROUP = "agentgym.envs"
COMMAND_GROUP = "agentgym.commands"
IMPORTER_GROUP = "agentgym.importers"


@dataclass(frozen=True)
class EnvRecord:
    """What we know about a registered env beyond Gymnasium's spec."""

    id: str
    entry_point: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    generator: str | None = None
    distribution: str = "(direct)"
    description: str = ""


@dataclass(frozen=True)
class PluginFailure:
    """A plugin entry point that raised while loading."""

    name: str
    value: str
    distribution: str
    error: str
    details: str


_RECORDS: dict[str, EnvRecord] = {}
_FAILURES: list[PluginFailure] = []
_current_distribution: str | None = None
_loaded = False


def register(
    id: str,
    entry_point: str | Any,
    kwargs: dict[str, Any] | None = None,
    *,
    generator: str | None = None,
    description: str = "",
    **gym_options: Any,
) -> None:
    """Register an environment with Gymnasium and with agentgym.

    Args:
        id: The env id users pass to `gym.make`, such as "SQL-v0".
        entry_point: "module:callable" returning the env (the import happens at `gym.make`, keeping
            `import agentgym` cheap), or the callable itself.
        kwargs: Default keyword arguments for the entry point.
        generator: "module:function" with signature `generate(seed=0, **options) -> list[Task]`, used by
            `agentgym tasks generate`.
        description: One line shown by `agentgym list`.
        **gym_options: Passed to `gymnasium.register` (for example `max_episode_steps`).
    """
    if id in _RECORDS and id in gym.registry:
        return  # registering the same plugin twice (e.g. `load_plugins(force=True)`) is harmless
    # Gymnasium's passive checker breaks an env whose first reset raised (its saved state stays None); our
    # envs are checked by `agentgym check` instead. A plugin may still ask for it.
    gym_options.setdefault("disable_env_checker", True)
    gym.register(id=id, entry_point=EnvFactory(entry_point, env_id=id, defaults=kwargs), kwargs=dict(kwargs or {}),
                 **gym_options)
    _RECORDS[id] = EnvRecord(
        id=id,
        entry_point=entry_point if isinstance(entry_point, str) else f"{entry_point.__module__}:{entry_point.__name__}",
        kwargs=dict(kwargs or {}),
        generator=generator,
        distribution=_current_distribution or "(direct)",
        description=description,
    )


class EnvFactory:
    """What Gymnasium calls to build a registered env: imports the entry point at `gym.make` time and applies
    the options every agentgym env accepts (`perturb=[...]`, `perturb_seed=N`, `remote="ws://host:port"`).

    With `remote=URL` (and optionally `remote_token=...`) the env runs on an `agentgym serve` server and this
    returns an `agentgym.serving.RemoteEnv` connected to it; the env's own arguments are then the server's.
    """

    def __init__(self, entry_point: str | Any, *, env_id: str | None = None,
                 defaults: dict[str, Any] | None = None) -> None:
        self.entry_point = entry_point
        self.env_id = env_id
        self.defaults = dict(defaults or {})

    def __call__(self, **kwargs: Any) -> gym.Env[Any, Any]:
        perturb = kwargs.pop("perturb", None)
        perturb_seed = int(kwargs.pop("perturb_seed", 0))
        perturb_rate = float(kwargs.pop("perturb_rate", 0.3))
        remote = kwargs.pop("remote", None)
        remote_token = kwargs.pop("remote_token", None)
        env: gym.Env[Any, Any]
        if remote is not None:
            env = self._remote(str(remote), remote_token, kwargs)
        else:
            builder = resolve_callable(self.entry_point) if isinstance(self.entry_point, str) else self.entry_point
            self._refuse_unknown(builder, kwargs)
            env = builder(**kwargs)
        if perturb:
            from agentgym.wrappers import Perturb

            kinds = [perturb] if isinstance(perturb, str) else list(perturb)
            env = Perturb(env, kinds, seed=perturb_seed, rate=perturb_rate)
        return env

    def _refuse_unknown(self, builder: Any, kwargs: dict[str, Any]) -> None:
        """A ValueError naming an argument the env does not take, the close one and every accepted one (rather than
        Python's "__init__() got an unexpected keyword argument"; not a TypeError, whose text Gymnasium rewrites)."""
        accepted = accepted_arguments(builder)
        if accepted is None:
            return
        for name in kwargs:
            if name not in accepted:
                close = difflib.get_close_matches(name, sorted(accepted), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"{self.env_id or 'this env'} takes no argument {name!r}{hint}; it takes: "
                                f"{', '.join(sorted(accepted))}")

    def _remote(self, url: str, token: str | None, kwargs: dict[str, Any]) -> gym.Env[Any, Any]:
        # Gymnasium passes the registered defaults along with the user's arguments; only the user's are refused.
        chosen = sorted(key for key, value in kwargs.items() if key not in self.defaults or self.defaults[key] != value)
        if chosen:
            raise TypeError(f"with remote=..., the env is made on the server: give {', '.join(chosen)} there "
                            f"(agentgym serve {self.env_id or 'ENV'} --env-arg KEY=VALUE)")
        from agentgym.serving.remote import RemoteEnv

        return RemoteEnv(url, env_id=self.env_id, token=token)


def accepted_arguments(builder: Any) -> set[str] | None:
    """The keyword arguments an env builder takes, with the factory's options: its own parameters and, where it
    passes `**kwargs` on to the env class it returns (by its return annotation), that class's `__init__`
    parameters up the class chain. None when the chain ends in `**kwargs` nobody names (anything may be taken)."""
    names: set[str] = set(FACTORY_OPTIONS)
    try:
        signature = inspect.signature(builder, eval_str=True)
    except (TypeError, ValueError, NameError):
        return None
    chain: list[Any] = [signature]
    if inspect.isclass(builder):
        chain = [builder]
    elif isinstance(signature.return_annotation, type) and _takes_any(signature):
        chain.append(signature.return_annotation)
    for item in chain:
        if inspect.isclass(item):
            for cls in item.__mro__:
                init = cls.__dict__.get("__init__")
                if init is None:
                    continue
                try:
                    parameters = inspect.signature(init)
                except (TypeError, ValueError):
                    return None
                names.update(name for name in parameters.parameters if name != "self")
                if not _takes_any(parameters):
                    return names - {"args", "kwargs"}
            return None
        names.update(item.parameters)
        if not _takes_any(item):
            return names
    return None


def _takes_any(signature: inspect.Signature) -> bool:
    return any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in signature.parameters.values())


def _distribution_name(entry_point: metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return dist.metadata["Name"] if dist is not None else "(unknown)"


def load_plugins(*, force: bool = False) -> None:
    """Run every `agentgym.envs` entry point once. Failures are recorded, not raised."""
    global _loaded, _current_distribution
    if _loaded and not force:
        return
    _loaded = True
    if force:
        _FAILURES.clear()
    for entry_point in sorted(metadata.entry_points(group=ENV_GROUP), key=lambda item: item.name):
        _current_distribution = _distribution_name(entry_point)
        try:
            entry_point.load()()
        except Exception as error:  # noqa: BLE001 - a broken third-party plugin must not break `import agentgym`
            _FAILURES.append(PluginFailure(
                name=entry_point.name, value=entry_point.value, distribution=_current_distribution,
                error=f"{type(error).__name__}: {error}", details=traceback.format_exc(),
            ))
        finally:
            _current_distribution = None


def registered() -> list[EnvRecord]:
    """Every env agentgym knows, sorted by id."""
    load_plugins()
    return [_RECORDS[key] for key in sorted(_RECORDS)]


def installed() -> list[EnvRecord]:
    """The envs installed distributions register through the `agentgym.envs` entry points (the built-in domains
    and every plugin), sorted by id; not those a script or test registers directly. Suites that must cover every
    env (the red team, the training smoke test, serving) take their list from here, so a new plugin is covered
    without a line added anywhere."""
    return [record for record in registered() if record.distribution != "(direct)"]


def plugin_failures() -> list[PluginFailure]:
    load_plugins()
    return list(_FAILURES)


def env_record(env_id: str) -> EnvRecord:
    """The record of `env_id`; the error lists the known ids."""
    load_plugins()
    env_id = env_id.split(":", 1)[-1]
    try:
        return _RECORDS[env_id]
    except KeyError:
        known = ", ".join(sorted(_RECORDS)) or "none"
        failed = "; ".join(f"{f.name} ({f.error})" for f in _FAILURES)
        hint = f" Plugins that failed to load: {failed}." if failed else ""
        raise KeyError(f"unknown environment {env_id!r}; registered: {known}.{hint}") from None


def resolve_callable(reference: str) -> Any:
    """Import "module:attribute" and return the attribute."""
    module_name, _, attribute = reference.partition(":")
    module = importlib.import_module(module_name)
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def entry_points(group: str) -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=group), key=lambda item: item.name)
