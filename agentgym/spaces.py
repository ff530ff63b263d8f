"""A Gymnasium `Text` space that admits every Unicode string, for prompts, tool output and model actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gymnasium import spaces

_SAMPLE_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 {}[]<>\"':,._-/\\\n\téüñ中文日本語🙂\u200b"
)


class UnicodeText(spaces.Text):
    """Any `str` of at most `max_length` characters (all of Unicode, lone surrogates included).

    Gymnasium's `Text` keeps its charset as a set; holding all 1.1M code points per space would cost memory in
    every env instance, so membership is checked by type and length instead, and `sample` draws from a small
    mixed alphabet plus random code points.
    """

    def __init__(self, max_length: int = 1 << 22, *, sample_length: int = 256, seed: Any = None) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=_SAMPLE_ALPHABET, seed=seed)
        self.sample_length = sample_length

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        length = int(self.np_random.integers(0, min(self.sample_length, self.max_length) + 1))
        characters = []
        for _ in range(length):
            if self.np_random.random() < 0.8:
                characters.append(_SAMPLE_ALPHABET[int(self.np_random.integers(len(_SAMPLE_ALPHABET)))])
            else:
                characters.append(chr(int(self.np_random.integers(1, 0x110000))))
        return "".join(characters)

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("UnicodeText", self.max_length))



# ------------------------------------------------------------------ vector envs (gymnasium.make_vec)
# `AsyncVectorEnv` passes observations through shared memory by default. Gymnasium's `Text` layout stores one
# int32 per possible character (`max_length` of them, 16 MiB per env here) and can only hold characters of its
# charset, so it cannot carry our text. A `UnicodeText` slot is a length-prefixed UTF-8 buffer instead. The
# vector env reads its buffer once, at construction, and expects a live view (as numpy arrays are), so the read
# returns `SharedTexts`: a sequence that decodes the buffer when indexed, and whose deep copy (what the vector
# env returns by default) is a plain tuple of the current texts.
SHARED_TEXT_BYTES = 1 << 20
"""Bytes of shared memory per env for one text observation in an async vector env (UTF-8, 4-byte length)."""


class SharedTexts(Sequence[str]):
    """A live view of the text observations in an async vector env's shared memory."""

    def __init__(self, memory: Any, count: int) -> None:
        self._memory = memory
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[position] for position in range(*index.indices(self._count)))
        if not -self._count <= index < self._count:
            raise IndexError(f"env index {index} out of range for {self._count} envs")
        start = (index % self._count) * SHARED_TEXT_BYTES
        buffer = self._memory.get_obj()
        size = int.from_bytes(bytes(buffer[start:start + 4]), "little")
        return bytes(buffer[start + 4:start + 4 + size]).decode("utf-8", "surrogatepass")

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


def _register_shared_memory() -> None:
    import multiprocessing
    from types import ModuleType

    from gymnasium.vector.utils import shared_memory

    def create(space: UnicodeText, n: int = 1, ctx: ModuleType = multiprocessing) -> Any:
        return ctx.Array("B", n * SHARED_TEXT_BYTES)

    def read(space: UnicodeText, memory: Any, n: int = 1) -> SharedTexts:
        return SharedTexts(memory, n)

    def write(space: UnicodeText, index: int, value: str, memory: Any) -> None:
        data = value.encode("utf-8", "surrogatepass")
        if len(data) + 4 > SHARED_TEXT_BYTES:
            raise ValueError(f"an observation of {len(data):,} bytes does not fit the {SHARED_TEXT_BYTES:,} bytes "
                             "of shared memory per env; pass vector_kwargs={'shared_memory': False} to make_vec")
        start = index * SHARED_TEXT_BYTES
        memory.get_obj()[start:start + 4 + len(data)] = len(data).to_bytes(4, "little") + data

    shared_memory.create_shared_memory.register(UnicodeText)(create)
    shared_memory.read_from_shared_memory.register(UnicodeText)(read)
    shared_memory.write_to_shared_memory.register(UnicodeText)(write)


_register_shared_memory()
