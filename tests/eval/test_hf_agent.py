"""The HF agent with a tiny Qwen3-shaped model built in the test (nothing downloaded): taught in ~100 CPU
steps to answer the toy env's zebra task with tool calls, then evaluated through `agentgym eval --agent hf:PATH`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgym.cli import main

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
CALL = '<tool_call>\n{"name": "count_animals", "arguments": {"kind": "zebra"}}\n</tool_call>'
ZEBRA = "toy-1"  # "How many zebras are in the zoo?" (answer 7)
SUBMIT = '<tool_call>\n{"name": "submit", "arguments": {"answer": 7}}\n</tool_call>'


def _tokenizer(texts: list[str], vocab_size: int) -> transformers.PreTrainedTokenizerFast:
    """A byte-level BPE trained on `texts` without splitting on words, so the fitted prompts take few tokens."""
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL, show_progress=False,
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>",
                                                pad_token="<|endoftext|>", padding_side="left")
    fast.add_tokens(ADDED)
    fast.chat_template = qwen3_chat_template
    return fast


def _episode_prompts(tokenizer: transformers.PreTrainedTokenizerFast) -> list[str]:
    """The two prompts of the zebra task as the agent renders them: the task, then after the lookup."""
    import eval_toyenv  # noqa: F401
    import gymnasium as gym

    from agentgym.agents.hf import _template_message

    def render(info: dict) -> str:
        return tokenizer.apply_chat_template([_template_message(m) for m in info["messages"]],
                                             tools=info["tools"], add_generation_prompt=True, tokenize=False)

    env = gym.make("EvalToy-v0")
    _, info = env.reset(seed=0, options={"task_id": ZEBRA})
    first = render(info)
    _, _, _, _, info = env.step(CALL)
    second = render(info)
    env.close()
    return [first, second]


def _taught_model(directory: Path) -> None:
    """Build the tokenizer and a ~0.3M-parameter Qwen3, and fit prompt -> call, result -> submit."""
    prompts = _episode_prompts(_tokenizer(["bootstrap text"], 300))
    tokenizer = _tokenizer((prompts + [CALL, SUBMIT]) * 3, 2000)
    config = transformers.Qwen3Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      head_dim=16, tie_word_embeddings=True, max_position_embeddings=2048,
                                      eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config)
    examples = []
    for prompt, target in zip(prompts, (CALL, SUBMIT)):
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        target_ids = tokenizer(target + "<|im_end|>", add_special_tokens=False)["input_ids"]
        examples.append((torch.tensor([prompt_ids + target_ids]),
                         torch.tensor([[-100] * len(prompt_ids) + target_ids])))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(120):
        ids, labels = examples[step % 2]
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)


@pytest.fixture(scope="module")
def taught_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny-qwen3")
    _taught_model(directory)
    return directory


def test_prompt_uses_the_chat_template_with_tools(taught_model: Path) -> None:
    from agentgym.agents import make_agent

    agent = make_agent(f"hf:{taught_model}", device="cpu")
    text = agent.prompt([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                        [{"type": "function", "function": {"name": "count_animals", "description": "d",
                                                           "parameters": {"type": "object", "properties": {}}}}])
    assert "<tools>" in text and '"count_animals"' in text and text.endswith("<|im_start|>assistant\n")


def test_eval_with_a_local_model_parses_its_tool_calls(taught_model: Path, tmp_path: Path) -> None:
    tasks = tmp_path / "zebra.jsonl"
    import eval_toyenv

    from agentgym.tasks import save_tasks

    save_tasks([task for task in eval_toyenv.toy_tasks() if task.id in (ZEBRA, "toy-2")], tasks)
    result = CliRunner().invoke(main, [
        "eval", "EvalToy-v0", "--agent", f"hf:{taught_model}", "--tasks", str(tasks), "--agent-arg",
        "max_new_tokens=40", "--agent-arg", "device=cpu", "--max-turns", "3", "--out", str(tmp_path / "run"),
        "--no-progress", "--no-plots",
    ])
    assert result.exit_code == 0, result.output
    records = {json.loads(line)["task_id"]: json.loads(line)
               for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()}
    zebra = records[ZEBRA]
    assert zebra["success"], zebra["messages"][2:]
    assert zebra["messages"][2]["tool_calls"][0]["function"]["name"] == "count_animals"
    assert records["toy-2"]["turns"] >= 1  # it ran (taught only the zebra task, it need not succeed)
