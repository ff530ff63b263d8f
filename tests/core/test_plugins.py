"""A third-party package with an `agentgym.envs` entry point, installed for real into a throw-away target."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = textwrap.dedent('''
    import agentgym
    from agentgym import ToolEnv, Task, tool

    @tool
    def count_animals(kind: str) -> int:
        """Count the animals of one kind in the zoo.

        Args:
            kind: The animal kind, for example "lion".
        """
        return {"lion": 3, "zebra": 7}.get(kind, 0)

    def make_env(**kwargs):
        tasks = [Task(id="z1", domain="zoo", family="count", split="test", prompt="How many zebras are there?",
                      answer=7, verifier={"name": "exact"},
                      solution=[{"name": "count_animals", "arguments": {"kind": "zebra"}},
                                {"name": "submit", "arguments": {"answer": 7}}])]
        return ToolEnv(tasks=tasks, tools=[count_animals], **kwargs)

    def register():
        agentgym.register(id="Zoo-v0", entry_point="zoo_plugin:make_env")
''')

BROKEN = "def register():\n    raise ImportError('needs the zoo-database package; pip install zoo-database')\n"


def build_package(root: Path, name: str, module_source: str) -> Path:
    package = root / name
    package.mkdir()
    (package / f"{name.replace('-', '_')}.py").write_text(module_source)
    (package / "pyproject.toml").write_text(textwrap.dedent(f'''
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{name}"
        version = "0.0.1"
        [tool.setuptools]
        py-modules = ["{name.replace('-', '_')}"]
        [project.entry-points."agentgym.envs"]
        {name.split('-')[0]} = "{name.replace('-', '_')}:register"
    '''))
    return package


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugins")
    target = root / "site"
    for name, source in (("zoo-plugin", PLUGIN), ("broken-plugin", BROKEN)):
        package = build_package(root, name, source)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(target), str(package)], check=True, capture_output=True)
    return target


def run_python(code: str, plugin_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(plugin_path)}
    return subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True,
                          timeout=120)


def test_gym_make_finds_the_plugin_without_importing_agentgym(plugin_path: Path) -> None:
    result = run_python(
        "import gymnasium as gym\n"
        "env = gym.make('agentgym:Zoo-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(obs)\n"
        "print(env.step({'name': 'count_animals', 'arguments': {'kind': 'zebra'}})[0])\n"
        "print(env.step({'name': 'submit', 'arguments': {'answer': 7}})[1])\n", plugin_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["How many zebras are there?", "7", "1.0"]


def test_agentgym_list_shows_the_plugin_and_the_broken_one(plugin_path: Path) -> None:
    result = run_python("from agentgym.cli import main; main(['list'])", plugin_path)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "Zoo-v0 │ 1 │ 1 │ zoo-plugin" in out
    assert "broken (broken-plugin, broken_plugin:register): ImportError: needs the zoo-database package" in out


def test_agentgym_list_count_counts_the_plugin(plugin_path: Path) -> None:
    # with --count an env is made (building whatever it needs) and counted; named, only that env is listed
    result = run_python("from agentgym.cli import main; main(['list', '--count', 'Zoo-v0'])", plugin_path)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "Zoo-v0 │ 1 │ 1 │ zoo-plugin" in out and "SQL-v0" not in out
    none = run_python("from agentgym.cli import main; main(['list', '--no-count', 'Zoo-v0'])", plugin_path)
    assert "Zoo-v0 │ - │ - │ zoo-plugin" in " ".join(none.stdout.split())


def test_check_passes_on_the_plugin(plugin_path: Path) -> None:
    result = run_python("from agentgym.cli import main; main(['check', 'Zoo-v0'])", plugin_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # Gymnasium, oracle, garbage, seeds, and the RFC 008 reward bar (floor, no gold at reset, reward range)
    assert result.stdout.count("PASS") == 8 and "FAIL" not in result.stdout


def test_import_agentgym_registers_every_env_without_importing_any() -> None:
    """Registration is lazy: `import agentgym` names entry points and imports no env, engine or validation
    library, so a training script does not pay for domains it never makes (bench/import_time.py measures it)."""
    probe = textwrap.dedent("""
        import sys
        import agentgym
        heavy = sorted(name for name in sys.modules if name.split(".")[0] in ("sqlglot", "pydantic", "duckdb",
                       "psycopg", "docker", "httpx", "torch", "faiss") or name in ("agentgym.env", "agentgym_sql.env",
                       "agentgym_cli.env", "agentgym_clinical.env", "agentgym_fhir.env"))
        print(len(agentgym.registered()), heavy)
        from agentgym import ToolEnv  # the public names still import on first use
        print(ToolEnv.__module__)
    """)
    output = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")
    count, heavy = output[0].split(" ", 1)
    assert int(count) >= 4 and heavy == "[]", output
    assert output[1] == "agentgym.env"


def test_every_built_in_domain_is_installed_and_registers_its_env() -> None:
    """The suites that cover every env take their list from the registry (`agentgym.registry.installed`), so a
    built-in domain that failed to install would drop out of them silently; this says so instead."""
    import tomllib

    import agentgym

    repo = Path(__file__).resolve().parents[2]
    expected = set()
    for pyproject in repo.glob("domains/*/pyproject.toml"):
        project = tomllib.loads(pyproject.read_text())["project"]
        if project.get("entry-points", {}).get("agentgym.envs"):
            expected.add(project["name"])
    assert expected, "no built-in domain found under domains/"
    installed = {record.distribution for record in agentgym.registry.installed()}
    missing = expected - installed
    assert not missing, f"built-in domains not installed (run make install): {sorted(missing)}"
