"""CodeAct blocks written by the model run in a sandbox, never in the trainer's process: escape attempts fail.

Each attack is a block a policy could write. The task's gold answer is a random secret that appears in no prompt
and no tool result, so finding it anywhere in a block's output means the block reached the grader's side. The
blocks run on every sandbox backend this machine has (Docker where a daemon answers, and the local one).
"""

from __future__ import annotations

import os
import secrets
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from agentgym_baselines.adapter import ToolCallFailed, environment_factory, task_dataset

import agentgym
from agentgym import Task, ToolEnv, tool

SECRET = "gold-" + secrets.token_hex(8)
ENV_ID = "BaselinesSecret-v0"


@tool
def echo(text: str) -> str:
    """Repeat a text back.

    Args:
        text: What to repeat.
    """
    return text


def make_secret_env(**kwargs: Any) -> ToolEnv:
    task = Task(id="secret-1", domain="toy", family="secret", split="train",
                prompt="Find the hidden code and submit it.", answer=SECRET,
                solution=[{"name": "submit", "arguments": {"answer": SECRET}}])
    return ToolEnv([task], [echo], **kwargs)


agentgym.register(id=ENV_ID, entry_point=f"{__name__}:make_secret_env")


def _backends() -> list[Any]:
    from agentgym.sandbox.backends import docker_problem

    problem = docker_problem()
    docker = pytest.param("docker", marks=pytest.mark.skipif(
        problem is not None and not os.environ.get("CI"), reason=f"no Docker: {problem}"))
    return [docker, "local"]


@pytest.fixture(params=_backends())
def episode(request: pytest.FixtureRequest) -> Any:
    instance = environment_factory(ENV_ID, codeact=True, code_sandbox=request.param, code_timeout=10)()
    instance.reset(task_id="secret-1")
    yield instance
    instance._code_runner.close()


def _run(instance: Any, code: str) -> str:
    try:
        return str(instance.execute_code(code=code))
    except ToolCallFailed as error:
        return str(error)


ATTACKS = {
    # The classic in-process escapes: a tool function's closure, globals, frames and defaults.
    "closure": "print([c.cell_contents for c in (echo.__closure__ or ())])\nprint(echo.__globals__.keys())",
    "format-string attribute access": "print('{0.__globals__}'.format(echo))",
    # Won against the earlier host-side runner (which refused "__" in the source text): the attribute names are
    # built at run time and str.format walks them, from the tool function's closure to the env's task.
    "format string with names built at run time": (
        "u = '_' * 2\nfor i in range(8):\n    for tail in ('', '._tool_env.task.answer', '._task().answer'):\n"
        "        try:\n            print(('{0.' + u + 'closure' + u + '[%d].cell_contents%s}' % (i, tail))"
        ".format(echo))\n        except Exception as e:\n            print(type(e).__name__)"),
    "function attributes without underscores": "import inspect\nprint(inspect.getclosurevars(echo))",
    "traceback frames": ("import sys\ntry:\n    echo()\nexcept Exception as error:\n    tb = error.__traceback__\n"
                         "    while tb:\n        print(tb.tb_frame.f_locals)\n        f = tb.tb_frame\n"
                         "        while f:\n            print(f.f_globals.get('__name__'), list(f.f_locals))\n"
                         "            f = f.f_back\n        tb = tb.tb_next"),
    "generator frames": "g = (x for x in [1])\nf = g.gi_frame\nwhile f:\n    print(f.f_globals.keys())\n    f = f.f_back",
    "every live thread's frames": ("import sys\nfor frame in sys._current_frames().values():\n    while frame:\n"
                                   "        print(frame.f_code.co_filename, frame.f_locals)\n"
                                   "        frame = frame.f_back"),
    "every object on the heap": ("import gc\nfor o in gc.get_objects():\n    try:\n        print(repr(o)[:300])\n"
                                 "    except Exception:\n        pass"),
    "the trainer's modules": "import sys\nprint(sorted(sys.modules))\nprint(sys.modules.get('agentgym_baselines'))",
    "environment and process tree": ("import os\nprint(dict(os.environ))\nprint(os.getppid())\n"
                                     "for pid in os.listdir('/proc'):\n    try:\n"
                                     "        print(pid, open(f'/proc/{pid}/cmdline', 'rb').read()[:200])\n"
                                     "        print(open(f'/proc/{pid}/environ', 'rb').read()[:2000])\n"
                                     "    except Exception as e:\n        print(pid, type(e).__name__)"),
    "the parent's memory": ("import os\nppid = os.getppid()\nfor pid in {ppid, 1}:\n    try:\n"
                            "        maps = open(f'/proc/{pid}/maps').read().splitlines()\n"
                            "        mem = open(f'/proc/{pid}/mem', 'rb')\n        for line in maps[:200]:\n"
                            "            lo, hi = (int(x, 16) for x in line.split()[0].split('-'))\n"
                            "            try:\n                mem.seek(lo); print(mem.read(min(hi - lo, 1 << 20)))\n"
                            "            except Exception:\n                pass\n"
                            "    except Exception as e:\n        print(pid, type(e).__name__, e)"),
    # Forged protocol lines: asking the host for the trainer's private methods instead of a tool.
    "forged call of a private method": ("import json\nfor name in ['_task', 'reset', 'get_reward', '_tool_env', "
                                        "'__init__', '_episode_stats']:\n"
                                        "    print('\\x1eAGENTGYM-CODEACT ' + json.dumps({'kind': 'call', "
                                        "'name': name, 'args': [], 'kwargs': {}}))\n"),
    "forged call through the driver's queue": ("import gc, queue, json\nfor o in gc.get_objects():\n"
                                               "    if isinstance(o, queue.Queue):\n"
                                               "        o.put(json.dumps({'kind': 'call', 'name': '_task', "
                                               "'args': [], 'kwargs': {}}))\n"
                                               "print(echo('after'))"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_escape_attempts_never_reach_the_task(episode: Any, attack: str) -> None:
    output = _run(episode, ATTACKS[attack])
    assert SECRET not in output, f"{attack}: the block's output holds the gold answer"
    assert "Task(" not in output and "agentgym_baselines" not in output.replace("'agentgym_baselines'", "")
    # The block saw nothing to submit: whatever it found, submitting it scores 0.
    _run(episode, "submit(answer='unknown')")
    assert episode.get_reward() == 0.0


def test_blocks_run_outside_the_trainer_process(episode: Any, tmp_path: Path) -> None:
    marker = f"/tmp/agentgym-codeact-escape-{uuid.uuid4().hex}"
    output = _run(episode, "import os, sys\nprint('baselines' in ' '.join(sys.modules), os.getpid())\n"
                           f"try:\n    open({marker!r}, 'w').write('pwned')\n    print(open({marker!r}).read())\n"
                           "except OSError as error:\n    print('refused', type(error).__name__)")
    assert output.splitlines()[0].split()[0] == "False"  # no module of the trainer is loaded there
    assert int(output.splitlines()[0].split()[1]) != os.getpid()
    # The block either writes into a /tmp of its own or is refused; it never writes the host's /tmp, except on a
    # local sandbox without namespaces, whose weaker isolation is documented (docs/sandbox.md).
    assert output.splitlines()[-1] in ("pwned", "refused PermissionError", "refused OSError")
    sandbox = episode._code_runner.sandbox
    if os.path.exists(marker):
        os.unlink(marker)
        assert sandbox.backend == "local" and "namespace" not in sandbox.isolation, sandbox.isolation
    assert "agentgym_baselines" in sys.modules


def test_tool_results_and_arguments_cross_as_exact_data(episode: Any) -> None:
    tricky = "'''\"\"\"\\n); import os; os._exit(3) #\n\x1eAGENTGYM-CODEACT {\"kind\": \"done\"}\n\u00e9\u4e2d"
    output = _run(episode, f"value = echo({tricky!r})\nprint(value == {tricky!r}, len(value))")
    assert output == f"True {len(tricky)}"
    assert _run(episode, "echo(object())").startswith("Error: TypeError: echo(): arguments must be JSON values")


def test_the_right_answer_still_scores_one_through_a_block(episode: Any) -> None:
    assert _run(episode, f"print(submit(answer={SECRET!r}))")
    assert episode.get_reward() == 1.0


def test_a_killed_interpreter_or_a_runaway_block_is_an_error_not_a_crash(episode: Any) -> None:
    episode._code_runner.timeout = 1.5
    assert "the sandbox was reset" in _run(episode, "import os\nos._exit(0)")
    assert "ran past 1.5 s" in _run(episode, "while True:\n    pass")
    assert _run(episode, "x = 41\nprint(echo(str(x + 1)))") == "42"
    assert _run(episode, "print(x)") == "41"  # the namespace persists within the episode
    episode.reset(task_id="secret-1")
    assert "NameError" in _run(episode, "print(x)")  # and not into the next one


def test_the_prompt_names_exactly_what_the_namespace_holds(episode: Any) -> None:
    system = task_dataset(ENV_ID, codeact=True)[0]["prompt"][0]["content"]
    assert "echo(text: str)" in system and "submit(" in system and "ToolError" in system
    names = _run(episode, "print(sorted(n for n in globals() if not n.startswith('_')))")
    assert names == "['ToolError', 'echo', 'submit']"
