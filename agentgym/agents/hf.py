"""The local transformers agent: `hf:PATH` loads a causal LM and its tokenizer from PATH (a directory or a
Hub id already in the local cache; nothing is downloaded unless the user's environment allows it).

Each turn renders the conversation with the model's own chat template, passing the env's tool schemas as
`tools=`, generates, and returns the new text; the env parses the tool calls from it (Hermes / Qwen
`<tool_call>{...}</tool_call>` tags or OpenAI JSON). Greedy by default; with `temperature > 0` sampling is
seeded per episode and turn, so a run is reproducible.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from agentgym.agents.base import Agent
from agentgym.rollout import AgentError
from agentgym.tasks import Task

_MODELS: dict[tuple[str, str, str], tuple[Any, Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


def _load(path: str, device: str, dtype: str) -> tuple[Any, Any, threading.Lock]:
    """One tokenizer and model per (path, device, dtype) per process, shared by the agents of all threads."""
    with _MODELS_LOCK:
        key = (path, device, dtype)
        if key not in _MODELS:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(path)
            torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype).to(device)  # type: ignore[arg-type]
            model.eval()
            if tokenizer.chat_template is None:
                raise ValueError(f"{path} has no chat template; agentgym needs one to render tools and turns")
            _MODELS[key] = (tokenizer, model, threading.Lock())
        return _MODELS[key]


def _template_message(message: dict[str, Any]) -> dict[str, Any]:
    """Chat templates expect tool-call arguments as a mapping, not the JSON string of the API format."""
    result = {key: value for key, value in message.items() if value is not None}
    if message.get("tool_calls"):
        calls = []
        for call in message["tool_calls"]:
            arguments = call["function"].get("arguments", "{}")
            try:
                arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
            except json.JSONDecodeError:
                pass  # keep the raw text: the template prints it as the model wrote it
            calls.append({**call, "function": {"name": call["function"]["name"], "arguments": arguments}})
        result["tool_calls"] = calls
    return result


class HFAgent(Agent):
    """A local transformers model as an agent.

    Args:
        path: A model directory (or a cached Hub id) with a tokenizer that has a chat template.
        max_new_tokens: Most tokens generated per turn.
        temperature: 0 for greedy decoding; above 0 samples (seeded by the episode and turn).
        top_p: Nucleus sampling when sampling.
        device: "cpu", "cuda", "cuda:1", ...; default cuda when available.
        dtype: "auto", "float32", "bfloat16", ...
        max_prompt_tokens: Longer prompts end the episode as a failure (`AgentError`) instead of overflowing.
    """

    name = "hf"

    def __init__(self, path: str, *, max_new_tokens: int = 512, temperature: float = 0.0, top_p: float = 1.0,
                 device: str | None = None, dtype: str = "auto", max_prompt_tokens: int | None = None) -> None:
        import torch

        self.path = path
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer, self.model, self._lock = _load(path, self.device, dtype)
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_prompt_tokens = max_prompt_tokens
        self._seed = 0
        self._turn = 0
        self.last_prompt = ""

    @classmethod
    def from_spec(cls, argument: str | None = None, **options: Any) -> HFAgent:
        """`hf:PATH`; options are the constructor's keyword arguments."""
        if not argument:
            raise ValueError("name the model: --agent hf:PATH (a directory with the model and tokenizer)")
        options.pop("seed", None)
        options.pop("base_url", None)
        return cls(argument, **options)

    def reset(self, task: Task | None = None, *, seed: int | None = None) -> None:
        self._seed = seed or 0
        self._turn = 0

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        """The text the model continues: the conversation through the chat template, tools included."""
        rendered: str = self.tokenizer.apply_chat_template(
            [_template_message(message) for message in messages], tools=tools or None,
            add_generation_prompt=True, tokenize=False,
        )
        return rendered

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        import torch

        self.last_prompt = self.prompt(messages, tools)
        inputs = self.tokenizer(self.last_prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        length = inputs["input_ids"].shape[1]
        if self.max_prompt_tokens is not None and length > self.max_prompt_tokens:
            raise AgentError(f"the prompt is {length} tokens; the limit is {self.max_prompt_tokens}")
        sampling: dict[str, Any] = {"do_sample": False}
        if self.temperature > 0:
            sampling = {"do_sample": True, "temperature": self.temperature, "top_p": self.top_p}
        with self._lock, torch.no_grad():
            if self.temperature > 0:
                torch.manual_seed((self._seed * 1000 + self._turn) % (2**31))
            output = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens,
                                         pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                                         **sampling)
        self._turn += 1
        text: str = self.tokenizer.decode(output[0, length:], skip_special_tokens=False)
        for token in {self.tokenizer.eos_token, self.tokenizer.pad_token} - {None}:
            text = text.replace(token, "")
        return text.strip()
