"""Shared fixtures of the evaluation tests: the toy env (registered as EvalToy-v0) and a scripted server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # worker processes and Ray actors import eval_toyenv from here
    sys.path.insert(0, str(HERE))

import eval_toyenv  # noqa: F401  (registers EvalToy-v0)
from chat_server import ChatServer, zoo_policy


@pytest.fixture
def zoo_server() -> Iterator[ChatServer]:
    with ChatServer(zoo_policy) as server:
        yield server
