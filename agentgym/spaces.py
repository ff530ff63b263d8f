"""A Gymnasium `Text` space that admits every Unicode string, for prompts, tool output and model actions."""

from __future__ import annotations

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

