"""Configuration edits: INI, JSON, nginx and dotenv files changed in place without touching the rest."""

from __future__ import annotations

import json
import random
import shlex

from agentgym_cli.data.fixtures import WORDS, Fixture
from agentgym_cli.tasks.base import TaskSpec, shell

FAMILY = "config_edits"


def _json_test(path: str, expected: object) -> dict[str, str]:
    code = (f"import json, sys; got = json.load(open({path!r})); want = json.loads({json.dumps(expected)!r}); "
            "sys.exit(0 if got == want else 'settings differ: ' + json.dumps(got))")
    return {"name": f"{path} holds the expected settings", "script": f"python3 -I -c {shlex.quote(code)}\n"}


def specs(fixture: Fixture, rng: random.Random) -> list[TaskSpec]:
    """Three configuration edits on `fixture`."""
    settings = json.loads(fixture.text("config/settings.json"))
    made: list[TaskSpec] = []
    for template in rng.sample(["ini_port", "ini_debug", "json_flag", "nginx_listen", "env_line", "json_list"], 3):
        if template == "ini_port":
            port = rng.choice([p for p in range(1025, 9999) if p != fixture.facts["port"]])
            made.append(TaskSpec(FAMILY, template, f"In `config/app.ini`, set the `port` of the `[server]` section to "
                                 f"{port}. Keep the `key = value` layout and change nothing else.",
                                 [shell(f"sed -i 's/^port = .*/port = {port}/' config/app.ini")], difficulty="easy"))
        elif template == "ini_debug":
            made.append(TaskSpec(FAMILY, template, "Turn debugging off in `config/app.ini`: its `debug` setting must "
                                 "become `false`. Keep the `key = value` layout and change nothing else.",
                                 [shell("sed -i 's/^debug = true$/debug = false/' config/app.ini")],
                                 difficulty="easy"))
        elif template == "json_flag":
            flag = rng.choice(sorted(settings["features"]))
            value = not settings["features"][flag]
            expected = json.loads(json.dumps(settings))
            expected["features"][flag] = value
            code = (f"import json; p = 'config/settings.json'; d = json.load(open(p)); d['features'][{flag!r}] = "
                    f"{value!r}; open(p, 'w').write(json.dumps(d, indent=2) + '\\n')")
            made.append(TaskSpec(FAMILY, template, f"In `config/settings.json`, set `features.{flag}` to "
                                 f"`{json.dumps(value)}`. Every other setting must stay as it is.",
                                 [shell(f"python3 -c {shlex.quote(code)}")], ignore=["config/settings.json"],
                                 tests=[_json_test("config/settings.json", expected)]))
        elif template == "nginx_listen":
            port = rng.randint(1024, 9999)
            made.append(TaskSpec(FAMILY, template, f"In `config/nginx.conf`, make the server listen on port {port} "
                                 f"instead of 80: the line `listen 80;` must become `listen {port};` (same "
                                 "indentation). Change nothing else.",
                                 [shell(f"sed -i 's/listen 80;/listen {port};/' config/nginx.conf")]))
        elif template == "env_line":
            key, setting = rng.choice([("LOG_LEVEL", rng.choice(("debug", "info", "warning", "error"))),
                                       ("TIMEOUT", str(rng.randint(5, 300))),
                                       ("REGION", rng.choice(("eu-west-1", "eu-north-1", "us-east-2", "ap-south-1"))),
                                       ("WORKERS", str(rng.randint(2, 64)))])
            made.append(TaskSpec(FAMILY, template, f"Append the line `{key}={setting}` to the end of "
                                 "`config/.env.example`, keeping its existing lines.",
                                 [shell(f"echo '{key}={setting}' >> config/.env.example")], difficulty="easy"))
        else:
            host = f"{rng.choice(WORDS)}.internal"
            expected = json.loads(json.dumps(settings))
            expected["allowed_hosts"].append(host)
            code = ("import json; p = 'config/settings.json'; d = json.load(open(p)); "
                    f"d['allowed_hosts'].append({host!r}); open(p, 'w').write(json.dumps(d, indent=2) + '\\n')")
            made.append(TaskSpec(FAMILY, template, f"Add the host `{host}` to the end of the `allowed_hosts` list in "
                                 "`config/settings.json`. Every other setting must stay as it is.",
                                 [shell(f"python3 -c {shlex.quote(code)}")], ignore=["config/settings.json"],
                                 tests=[_json_test("config/settings.json", expected)]))
    return made
