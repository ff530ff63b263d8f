"""An exported run loads into the tools people train with: a chat template and TRL's SFTTrainer take its
`messages` and `tools` columns as they are (on a tiny model made in the test, on CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgym.cli import main

_NEEDS = "the export's SFT check needs the hf extra and agentgym-baselines (make install installs both)"
datasets = pytest.importorskip("datasets", reason=_NEEDS)
pytest.importorskip("trl", reason=_NEEDS)
tiny = pytest.importorskip("agentgym_baselines.tiny", reason=_NEEDS)


def _export(tmp_path: Path) -> object:
    run = tmp_path / "run"
    assert CliRunner().invoke(main, ["eval", "EvalToy-v0", "--agent", "oracle", "--n", "4", "--out", str(run),
                                     "--no-progress", "--no-plots"]).exit_code == 0
    result = CliRunner().invoke(main, ["export", str(run), "--out", str(tmp_path / "ds"), "--only-success"])
    assert result.exit_code == 0, result.output
    return datasets.load_from_disk(str(tmp_path / "ds"))


def test_an_exported_row_goes_to_a_chat_template_as_it_is(tmp_path: Path) -> None:
    row = _export(tmp_path)["train"][0]
    assert isinstance(row["tools"], list) and isinstance(row["tools"][0]["function"]["parameters"], dict)
    call = next(message for message in row["messages"] if message["tool_calls"])["tool_calls"][0]
    assert isinstance(call["function"]["arguments"], dict)
    # each tool keeps only its own parameters (no union of every tool's properties filled with nulls)
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in row["tools"]}
    assert set(schemas["count_animals"]["properties"]) == {"kind"}
    tokenizer = tiny.build_tiny_tokenizer(0)
    text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
    assert "count_animals" in text and "<tool_call>" in text and "<tool_response>" in text
    assert row["messages"][1]["content"] in text


def test_sft_trainer_takes_the_export_for_a_training_step(tmp_path: Path) -> None:
    import torch
    from trl import SFTConfig, SFTTrainer

    dataset = _export(tmp_path)["train"].select_columns(["messages", "tools"])
    model, tokenizer = tiny.build_tiny_model(0)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    config = SFTConfig(output_dir=str(tmp_path / "sft"), use_cpu=True, max_steps=1, per_device_train_batch_size=2,
                       learning_rate=1e-2, report_to=[], logging_steps=1, save_strategy="no", bf16=False)
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    output = trainer.train()
    assert output.global_step == 1 and torch.isfinite(torch.tensor(output.training_loss))
    changed = sum(not torch.equal(old, new.detach()) for old, new in zip(before, model.parameters()))
    assert changed > 0
