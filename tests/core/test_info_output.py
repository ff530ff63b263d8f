"""`agentgym info` piped: each tool's JSON schema stays on one line that parses (Rich used to wrap it
mid-token at 80 columns)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agentgym.cli import main


def test_info_prints_each_schema_as_one_line_of_json() -> None:
    result = CliRunner().invoke(main, ["info", "SQL-v0"], terminal_width=80)
    assert result.exit_code == 0, result.output
    schemas = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("    {")]
    assert len(schemas) >= 4 and all(schema["type"] == "object" for schema in schemas)
    assert any(len(json.dumps(schema)) > 80 for schema in schemas)  # long enough that wrapping would show
