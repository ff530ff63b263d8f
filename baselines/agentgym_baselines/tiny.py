"""`tiny:random`: a ~100K-parameter Qwen3-shaped model and a matching tokenizer, built in code.

For smoke runs and tests on CPU: nothing is downloaded. The tokenizer is a byte-level BPE trained on a few KB of
generated text (tool calls, JSON, Python, English words), carries Qwen's special tokens and TRL's own Qwen3 chat
template, so TRL attaches its tool-call response parser to it exactly as it does for a real Qwen3 checkpoint.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

TINY_MODEL_SPEC = "tiny:random"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

_WORDS = ["the", "a", "an", "of", "to", "in", "is", "it", "that", "for", "on", "with", "as", "by", "at", "from", "this", "be", "are", "was", "or", "which", "answer", "task", "tool", "call", "submit", "result", "error", "table", "query", "select", "where", "count", "sum", "name", "value", "number", "word", "city", "color", "apple", "river", "stone", "cloud", "lookup", "search", "patient", "record", "code", "python", "print", "def", "return", "import", "json", "true", "false", "none", "first", "last", "total", "average", "find", "list", "show", "rows", "column", "order", "group", "limit", "and", "not", "yes", "no"]


def _corpus(seed: int) -> list[str]:
    """Text in the shapes the model will read and write: the chat template's own wording, the default system
    prompt, tool schemas, tool calls, JSON, code. Training the BPE on it keeps prompts short in tokens."""
    from trl.chat_template_utils import qwen3_chat_template

    from agentgym.env import CODE_SYSTEM_SUFFIX, DEFAULT_SYSTEM_PROMPT

    rng = random.Random(seed)
    boilerplate = [qwen3_chat_template, DEFAULT_SYSTEM_PROMPT + CODE_SYSTEM_SUFFIX,
                   ('{"type": "function", "function": {"name": "submit", "description": "Submit your final answer '
                    'and end the episode. Call this exactly once, when you are done.", "parameters": {"type": '
                    '"object", "properties": {"answer": {"description": "The final answer to the task."}}}, '
                    '"return": {"type": "string"}}}')]
    lines: list[str] = boilerplate * 20
    for _ in range(400):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))
        tool = rng.choice(["submit", "lookup", "search", "execute_sql", "python"])
        argument = rng.choice(_WORDS)
        lines.append(words.capitalize() + ".")
        lines.append(f'{{"name": "{tool}", "arguments": {{"answer": "{argument}", "key": {rng.randint(0, 99)}}}}}')
        lines.append(f"```python\nresult = {tool}({argument!r})\nprint(result)\n```")
        lines.append(f"<|im_start|>assistant\n<tool_call>\n{{\"name\": \"{tool}\"}}\n</tool_call><|im_end|>\n")
    return lines


def build_tiny_tokenizer(seed: int = 0, vocab_size: int = 2048, *, corpus: Sequence[str] = ()) -> Any:
    """A byte-level BPE `PreTrainedTokenizerFast` with Qwen's special tokens and TRL's Qwen3 chat template,
    fitted on the built-in corpus plus `corpus` (extra text, e.g. a train split's prompts, so they take fewer
    tokens).

    eos is `<|im_end|>` (TRL cuts tool-result wrappers at the last eos), pad is `<|endoftext|>`, padding left.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(_corpus(seed) + list(corpus), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.add_tokens(ADDED_TOKENS)
    tokenizer.chat_template = qwen3_chat_template
    return tokenizer


def build_tiny_model(seed: int = 0, *, hidden_size: int = 64, layers: int = 2,
                     corpus: Sequence[str] = ()) -> tuple[Any, Any]:
    """A randomly initialised Qwen3 causal LM (~100K parameters) and its tokenizer, both made in code.

    Args:
        seed: Seeds the tokenizer's corpus and the weight initialisation; the same seed gives the same model.
        hidden_size: Width of the model (head_dim 16, 4 query and 2 key-value heads).
        layers: Number of decoder layers.
        corpus: Extra text the tokenizer is fitted on (see `build_tiny_tokenizer`).

    Returns:
        `(model, tokenizer)`, the model in float32 on CPU with tied embeddings.
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_tiny_tokenizer(seed, corpus=corpus)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=8192,  # rotary positions: room for FHIR-v0 and CLI-v0 prompts with their tool schemas
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = Qwen3ForCausalLM(config)
    finally:
        torch.random.set_rng_state(generator_state)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer
