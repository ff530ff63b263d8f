"""Fixtures of the reliability tests; they live in `reliability_support` so that test modules can import its
helpers by a name no other test folder uses (every folder has a `conftest`)."""

from reliability_support import *  # noqa: F403  (pytest finds the fixtures through this module's namespace)
