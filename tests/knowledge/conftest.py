"""Fixtures of the knowledge-base tests; they live in `knowledge_support` so that test modules can import its
helpers by a name no other test folder uses (every folder has a `conftest`)."""

from knowledge_support import *
