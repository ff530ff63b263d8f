"""The Docker backend on the real daemon: the API, its hardening, and recovery from bad input and faults.

Every bad-input test ends with ``assert_next_episode_works``: a reset and a call must succeed within 5 s.
"""

from __future__ import annotations

import io
import socket
import tarfile
import threading
import time

import pytest

from agentgym.sandbox import ExecResult, Sandbox, SandboxError, make_tar

pytestmark = pytest.mark.docker


def assert_next_episode_works(sandbox: Sandbox) -> None:
    """The issue's recovery bound: after bad input, reset and a working call within 5 seconds."""
    started = time.monotonic()
    sandbox.reset()
    shell = sandbox.run("echo shell-ok && ls -A | wc -l", timeout=5)
    python = sandbox.run_python("print(6 * 7)", timeout=5)
    elapsed = time.monotonic() - started
    assert shell.stdout == "shell-ok\n0\n", shell
    assert python.stdout == "42\n", python
    assert elapsed < 5, f"the next episode took {elapsed:.1f} s to work"


# ----- the API -------------------------------------------------------------------------------------------------
def test_shell_state_persists_across_calls(sandbox: Sandbox) -> None:
    assert sandbox.run("mkdir -p sub && cd sub && export GREETING=hi && counter=3").ok
    result = sandbox.run("pwd; echo $GREETING $counter")
    assert result.stdout == "/work/sub\nhi 3\n"
    assert sandbox.run("exit 7").exit_code == 7
    # A shell that exited is replaced, keeping the directory and exported variables.
    assert sandbox.run("pwd; echo $GREETING").stdout == "/work/sub\nhi\n"


def test_python_namespace_persists_and_echoes_last_expression(sandbox: Sandbox) -> None:
    assert sandbox.run_python("x = 1").stdout == ""
    assert sandbox.run_python("x += 1\nprint(x)").stdout == "2\n"
    assert sandbox.run_python("x * 10").stdout == "20\n"
    failed = sandbox.run_python("undefined_name")
    assert failed.exit_code == 1 and "NameError" in failed.stderr and "worker" not in failed.stderr
    assert sandbox.run_python("import sys; sys.exit(3)").exit_code == 3
    assert sandbox.run_python("print(x)").stdout == "2\n"


def test_output_from_subprocesses_and_raw_file_descriptors_is_captured(sandbox: Sandbox) -> None:
    result = sandbox.run_python("import os, subprocess\nos.write(1, b'raw\\n')\nsubprocess.run(['echo', 'child'])\n"
                                "import sys; print('err', file=sys.stderr)\nNone")
    assert result.stdout == "raw\nchild\n"
    assert result.stderr == "err\n"


def test_put_and_get_files(sandbox: Sandbox) -> None:
    sandbox.put_files({"notes/a.txt": "hello\n", "/work/bin.dat": bytes(range(256)), "/tmp/t.txt": b"tmp"})
    assert sandbox.run("cat notes/a.txt").stdout == "hello\n"
    assert sandbox.get_file("bin.dat") == bytes(range(256))
    assert sandbox.get_file("/tmp/t.txt") == b"tmp"
    sandbox.run("echo made-inside > out.txt")
    assert sandbox.get_file("/work/out.txt") == b"made-inside\n"
    with pytest.raises(FileNotFoundError):
        sandbox.get_file("missing.txt")


def test_put_archive_extracts_and_refuses_escapes(sandbox: Sandbox) -> None:
    sandbox.put_archive(make_tar({"fixture/readme.md": "# fixture\n", "fixture/data/x.csv": "a,b\n1,2\n"}))
    assert sandbox.run("find fixture -type f | sort").stdout == "fixture/data/x.csv\nfixture/readme.md\n"
    compressed = io.BytesIO()
    with tarfile.open(fileobj=compressed, mode="w:gz") as archive:
        info = tarfile.TarInfo("z.txt")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"z"))
    sandbox.put_archive(compressed.getvalue(), path="/work/gz")
    assert sandbox.get_file("gz/z.txt") == b"z"
    with pytest.raises(SandboxError, match="outside"):
        sandbox.put_archive(make_tar({"../escape.txt": "x"}))


def test_reset_restores_a_clean_sandbox(sandbox: Sandbox) -> None:
    sandbox.put_files({"leftover.txt": "x", "/tmp/leftover": "y"})
    sandbox.run("export LEFT=1; cd /tmp; (sleep 1000 &); nohup sleep 1000 >/dev/null 2>&1 &")
    sandbox.run_python("leftover = 1")
    sandbox.reset()
    assert sandbox.run("ls -A /work /tmp; echo \"[$LEFT]\"; pwd").stdout == "/tmp:\n\n/work:\n[]\n/work\n"
    assert sandbox.run("ps -e -o comm= | grep -c sleep").stdout.strip() == "0"
    assert "NameError" in sandbox.run_python("leftover").stderr


def test_timeout_kills_the_command_and_keeps_the_sandbox_usable(sandbox: Sandbox) -> None:
    sandbox.run("cd /tmp && export KEPT=yes")
    result = sandbox.run("echo before; sleep 30", timeout=0.5)
    assert result.timed_out and result.exit_code == 124 and result.stdout == "before\n"
    assert sandbox.run("pwd; echo $KEPT", timeout=5).stdout == "/tmp\nyes\n"
    sandbox.run_python("kept = 'namespace'")
    interrupted = sandbox.run_python("import time\nwhile True: time.sleep(0.01)", timeout=0.5)
    assert interrupted.timed_out and "KeyboardInterrupt" in interrupted.stderr
    assert sandbox.run_python("kept").stdout == "'namespace'\n"


def test_code_that_ignores_the_interrupt_is_killed(sandbox: Sandbox) -> None:
    ignores = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.01)"
    swallows = "import time\nwhile True:\n    try:\n        time.sleep(0.01)\n    except BaseException:\n        pass"
    for stubborn in (ignores, swallows):
        result = sandbox.run_python(stubborn, timeout=0.5)
        assert result.timed_out and "namespace is lost" in result.stderr, result
        assert sandbox.run_python("print('fresh')", timeout=5).stdout == "fresh\n"


def test_output_is_capped_and_marked(docker_ready: None) -> None:
    with Sandbox.create(backend="docker", max_output=1000) as sandbox:
        result = sandbox.run("seq 1 100000")
        assert result.truncated and len(result.stdout) == 1000 and result.stdout.startswith("1\n2\n")
        assert not sandbox.run("echo small").truncated


# ----- hardening ---------------------------------------------------------------------------------------------------
def test_container_is_hardened(sandbox: Sandbox) -> None:
    status = sandbox.run("id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status").stdout.split()
    assert status == ["65534", "CapEff:", "0000000000000000", "NoNewPrivs:", "1"]
    assert sandbox.run("touch /etc/evil").exit_code != 0  # read-only root
    assert sandbox.run("ls /sys/class/net").stdout.split() == ["lo"]  # no network but loopback
    assert sandbox.run("cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max").stdout == "128\n"


# ----- bad input ---------------------------------------------------------------------------------------------------
def test_fork_bomb(sandbox: Sandbox) -> None:
    result = sandbox.run("bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", timeout=10)
    assert result.exit_code in (0, 124)
    assert_next_episode_works(sandbox)


def test_allocating_4_gb(sandbox: Sandbox) -> None:
    result = sandbox.run_python("block = bytearray(4 * 1024 ** 3)", timeout=20)
    assert result.exit_code != 0  # MemoryError, or the kernel's OOM kill of the interpreter
    shell = sandbox.run("python3 -c 'b = bytearray(4 * 1024 ** 3); b[::4096] = b\"x\" * len(b[::4096])'", timeout=20)
    assert shell.exit_code != 0
    assert_next_episode_works(sandbox)


def test_infinite_loop(sandbox: Sandbox) -> None:
    assert sandbox.run("while :; do :; done", timeout=1).timed_out
    assert sandbox.run_python("while True: pass", timeout=1).timed_out
    assert_next_episode_works(sandbox)


def test_writing_past_the_disk_limit(sandbox: Sandbox) -> None:
    result = sandbox.run("dd if=/dev/zero of=big bs=1M count=1000", timeout=20)
    assert result.exit_code != 0 and "No space left" in result.stderr
    with pytest.raises(SandboxError, match="No space left"):
        sandbox.put_files({"more.bin": b"x" * (1 << 20)})
    assert_next_episode_works(sandbox)


def test_100_mb_of_stdout(sandbox: Sandbox) -> None:
    result = sandbox.run("head -c 100000000 /dev/zero | tr '\\0' 'a'", timeout=30)
    assert result.exit_code == 0 and result.truncated and len(result.stdout) == sandbox.max_output
    python = sandbox.run_python("import sys\nfor _ in range(100): sys.stdout.write('b' * 1_000_000)", timeout=30)
    assert python.truncated and len(python.stdout) == sandbox.max_output
    assert_next_episode_works(sandbox)


def test_cannot_reach_a_server_on_the_host_loopback(sandbox: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    host_address = _host_address()
    try:
        probe = (f"import socket\nfor host in ['127.0.0.1', {host_address!r}, '172.17.0.1', 'host.docker.internal']:\n"
                 "    try:\n        socket.create_connection((host, %d), timeout=1); print('reached', host)\n"
                 "    except OSError as error: print('blocked', host)\n" % port)
        result = sandbox.run_python(probe, timeout=15)
        assert "reached" not in result.stdout and result.stdout.count("blocked") == 4, result
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()
    assert_next_episode_works(sandbox)


def _host_address() -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing interface
        return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def test_cannot_read_a_secret_file_on_the_host(sandbox: Sandbox, tmp_path: object) -> None:
    from pathlib import Path

    secret = Path(str(tmp_path)) / "agentgym-secret-token.txt"
    secret.write_text("TOKEN-1234567890")
    result = sandbox.run(f"cat {secret}; find / -name agentgym-secret-token.txt 2>/dev/null; "
                         "grep -rs TOKEN-1234567890 /etc /root /home /tmp /work /mnt /srv; true", timeout=20)
    assert "TOKEN-1234567890" not in result.stdout and "agentgym-secret-token" not in result.stdout
    assert_next_episode_works(sandbox)


def test_no_docker_socket_inside(sandbox: Sandbox) -> None:
    result = sandbox.run("ls -la /var/run/docker.sock /run/docker.sock; find / -name 'docker.sock' 2>/dev/null; "
                         "env | grep -i docker; true", timeout=20)
    assert "docker.sock" not in result.stdout and "DOCKER" not in result.stdout.upper()
    assert_next_episode_works(sandbox)


def test_killing_pid_1_from_inside(sandbox: Sandbox) -> None:
    restarts = sandbox.restarts
    result = sandbox.run("kill -9 1; kill -TERM 1; kill -INT 1; kill -9 -1; echo after", timeout=5)
    assert result.exit_code in (0, 137)  # `kill -9 -1` ends the shell itself
    sandbox.run_python("import os, signal; os.kill(1, signal.SIGKILL); os.kill(1, signal.SIGTERM)")
    assert sandbox.restarts == restarts  # the supervisor never died
    assert_next_episode_works(sandbox)


def test_container_killed_from_outside_mid_call(sandbox: Sandbox) -> None:
    assert isinstance(sandbox, __import__("agentgym.sandbox.docker_backend", fromlist=["x"]).DockerSandbox)
    container = sandbox.container
    killer = threading.Timer(0.5, container.kill)
    killer.start()
    result: ExecResult = sandbox.run("sleep 20", timeout=30)
    killer.join()
    assert result.exit_code == 137 and "restarted" in result.stderr
    assert sandbox.run("echo back", timeout=5).stdout == "back\n"
    assert_next_episode_works(sandbox)


def test_container_removed_from_outside_between_calls(sandbox: Sandbox) -> None:
    sandbox.container.remove(force=True)
    assert_next_episode_works(sandbox)


@pytest.mark.slow
def test_daemon_restarted_between_episodes(sandbox: Sandbox) -> None:
    import os
    import signal
    import subprocess
    from pathlib import Path

    pid = int(Path("/var/run/docker.pid").read_text())
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
    os.kill(pid, signal.SIGTERM)
    for _ in range(300):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    with open("/tmp/dockerd.log", "ab") as log:
        subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
    sandbox.reset()  # waits for the daemon, restarts the container
    assert sandbox.run("echo alive", timeout=5).stdout == "alive\n"
    assert_next_episode_works(sandbox)


def test_prelude_and_environment(docker_ready: None) -> None:
    prelude = "import json\nclient = {'base': 'preloaded'}"
    with Sandbox.create(backend="docker", env={"TASK_ID": "t-1"}, python_prelude=prelude) as sandbox:
        assert sandbox.run("echo $TASK_ID").stdout == "t-1\n"
        assert sandbox.run_python("client['base']").stdout == "'preloaded'\n"
        sandbox.run_python("del client")
        sandbox.reset()
        assert sandbox.run_python("json.dumps(client)").stdout == "'{\"base\": \"preloaded\"}'\n"


def test_python_process_exit_is_reported_and_replaced(sandbox: Sandbox) -> None:
    result = sandbox.run_python("import os; os._exit(5)")
    assert result.exit_code == 5 and "namespace is lost" in result.stderr
    assert sandbox.run_python("1 + 1").stdout == "2\n"


def test_user_code_cannot_reach_the_supervisors_reply_channel(sandbox: Sandbox) -> None:
    result = sandbox.run("ls /proc/1/fd; echo forged > /proc/1/fd/3; cat /proc/self/oom_score_adj")
    assert "Permission denied" in result.stderr and result.stdout.strip().endswith("500")
    assert sandbox.run("echo still-talking").stdout == "still-talking\n"


def test_shell_functions_shadowing_builtins_do_not_break_the_protocol(sandbox: Sandbox) -> None:
    sandbox.run("read() { echo shadowed; }; eval() { echo shadowed; }; printf() { echo shadowed; }")
    assert sandbox.run("echo $((6 * 7))").stdout == "42\n"


def test_shell_survives_exec_set_e_and_binary_output(sandbox: Sandbox) -> None:
    sandbox.run("cd /tmp && export KEEP=1")
    assert sandbox.run("exec bash").exit_code == 0  # the replacement shell reads /dev/null and exits
    assert sandbox.run("set -e; false; echo unreachable").stdout == ""
    assert sandbox.run("pwd; echo $KEEP").stdout == "/tmp\n1\n"
    binary = sandbox.run("printf '\\xff\\xfeok'")
    assert binary.stdout.endswith("ok") and "\ufffd" in binary.stdout


def test_calls_from_many_threads_are_serialized(sandbox: Sandbox) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as executor:
        outputs = list(executor.map(lambda n: sandbox.run_python(f"print({n} * 2)").stdout, range(64)))
    assert outputs == [f"{n * 2}\n" for n in range(64)]
