"""Env mixing: one policy trained on several envs, through TRL's multi-environment `environment_factory`.

TRL (1.16) takes `environment_factory` as a dict `{name: factory}` and routes each dataset row to the factory named
by the row's `environment` column; a rollout sees only its env's tools, and each env class that owns its reward
(`get_reward`) gets its own reward column, logged as `rewards/<EnvClass>/mean`. Here the names are the env ids:
`mixed_task_dataset` draws each env's share of rows and adds the `environment` column, and
`environment_factories` makes the dict.

```python
env_ids = ["SQL-v0", "FHIR-v0"]
dataset = mixed_task_dataset(env_ids, [0.7, 0.3], split="train")
trainer = GRPOTrainer(model, args=..., train_dataset=dataset, environment_factory=environment_factories(env_ids))
```
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from agentgym_baselines.adapter import AgentGymEnvironment, environment_factory, task_dataset

ENVIRONMENT_COLUMN = "environment"  # the dataset column TRL reads to pick a row's env


def parse_env_ids(text: str) -> list[str]:
    """`"SQL-v0,FHIR-v0"` -> `["SQL-v0", "FHIR-v0"]`; raises ValueError on an empty or repeated id."""
    env_ids = [part.strip() for part in text.split(",")]
    if not all(env_ids):
        raise ValueError(f"--env {text!r} has an empty env id; write ids separated by commas, e.g. SQL-v0,FHIR-v0")
    repeated = sorted({env_id for env_id in env_ids if env_ids.count(env_id) > 1})
    if repeated:
        raise ValueError(f"--env names {', '.join(repeated)} more than once; give each env once and set shares "
                         f"with --mix")
    return env_ids


def parse_mix(text: str | None, count: int) -> list[float]:
    """The shares of `count` envs from `--mix` ("0.4,0.4,0.2"), normalised to sum to 1; equal when `text` is None.

    Raises:
        ValueError: one line saying what is wrong (wrong count, not a number, negative, all zero).
    """
    if text is None or text.strip() == "":
        return [1.0 / count] * count
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != count:
        raise ValueError(f"--mix has {len(parts)} share(s) but --env names {count} env(s); give one share per env, "
                         f"in the order of --env (e.g. --mix {','.join(['1'] * count)})")
    shares = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"--mix share {part!r} is not a number; write shares like 0.4,0.4,0.2") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"--mix share {part} must be a finite number >= 0")
        shares.append(value)
    total = sum(shares)
    if total <= 0:
        raise ValueError("--mix shares sum to 0; give at least one env a share above 0")
    return [value / total for value in shares]


def _counts(total: int, shares: Sequence[float]) -> list[int]:
    """Split `total` rows by `shares` (largest remainders; every env with a share above 0 gets at least 1 row)."""
    exact = [total * share for share in shares]
    counts = [math.floor(value) for value in exact]
    order = sorted(range(len(shares)), key=lambda index: exact[index] - counts[index], reverse=True)
    for index in order[:total - sum(counts)]:
        counts[index] += 1
    return [max(count, 1) if share > 0 else 0 for count, share in zip(counts, shares, strict=True)]


def mixed_task_dataset(env_ids: Sequence[str], shares: Sequence[float], split: str | None = "train", *,
                       seed: int = 0, codeact: bool = False, size: int | None = None,
                       env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                       remote: Mapping[str, str] | None = None, remote_token: str | None = None) -> Any:
    """A `datasets.Dataset` mixing the envs' tasks in the given shares, with an `environment` column.

    Args:
        env_ids: Registered agentgym envs.
        shares: One share per env (normalised here); an env with share 0 gets no rows.
        split: The task split of every env.
        seed: Seeds which tasks are drawn and the row order.
        codeact: CodeAct system prompts.
        size: Rows in all (default: the envs' task counts added up). Env i gets round(size * share_i) rows: its
            tasks in a seeded random order, repeated when it has fewer tasks than that.
        env_kwargs: Per env id, keyword arguments for `gymnasium.make`.
        remote: Per env id, the `agentgym serve` URL its episodes run on.
        remote_token: The servers' bearer token.

    Returns:
        Rows of `task_dataset` (prompt, task_id, ...) plus `environment` (the env id), shuffled.
    """
    if len(shares) != len(env_ids):
        raise ValueError(f"{len(shares)} shares for {len(env_ids)} envs; give one share per env")
    total_share = sum(shares)
    if total_share <= 0 or any(share < 0 for share in shares):
        raise ValueError("shares must be >= 0 and sum to more than 0")
    per_env: list[list[dict[str, Any]]] = []
    for env_id in env_ids:
        dataset = task_dataset(env_id, split=split, codeact=codeact,
                               remote=(remote or {}).get(env_id), remote_token=remote_token,
                               **dict((env_kwargs or {}).get(env_id, {})))
        rows = dataset.to_list()
        if not rows:
            raise ValueError(f"{env_id} has no tasks in split {split!r}; pick another --split or drop it from --env")
        per_env.append(rows)
    total = size if size is not None else sum(len(rows) for rows in per_env)
    counts = _counts(total, [share / total_share for share in shares])
    generator = random.Random(seed)
    mixed: list[dict[str, Any]] = []
    for env_id, rows, count in zip(env_ids, per_env, counts, strict=True):
        order = list(range(len(rows)))
        generator.shuffle(order)
        for position in range(count):
            mixed.append({**rows[order[position % len(order)]], ENVIRONMENT_COLUMN: env_id})
    generator.shuffle(mixed)
    columns = list(dict.fromkeys(key for row in mixed for key in row))
    from datasets import Dataset

    return Dataset.from_dict({column: [row.get(column) for row in mixed] for column in columns})


def environment_factories(env_ids: Sequence[str], *, env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                          remote: Mapping[str, str] | None = None, remote_token: str | None = None,
                          **options: Any) -> dict[str, type[AgentGymEnvironment]]:
    """`{env_id: environment_factory(env_id, ...)}` for TRL's multi-environment `environment_factory`.

    `options` (codeact=, code_sandbox=, ...) apply to every env; `env_kwargs` and `remote` are per env id.
    """
    return {env_id: environment_factory(env_id, remote=(remote or {}).get(env_id), remote_token=remote_token,
                                        **options, **dict((env_kwargs or {}).get(env_id, {})))
            for env_id in env_ids}


def parse_remotes(text: str | None, env_ids: Sequence[str]) -> dict[str, str]:
    """`--remote` as {env id: URL}: one URL for one env, or one per env in --env's order ("-" keeps one local)."""
    if text is None or text.strip() == "":
        return {}
    urls = [part.strip() for part in text.split(",")]
    if len(urls) != len(env_ids):
        raise ValueError(f"--remote has {len(urls)} URL(s) but --env names {len(env_ids)} env(s); give one URL per "
                         f"env in --env's order, '-' for an env that runs here")
    return {env_id: url for env_id, url in zip(env_ids, urls, strict=True) if url != "-"}
