"""Deterministic file-tree fixtures: a generated workspace per (seed, index), packed as a reproducible tar.

A workspace holds what shell tasks are about: a small software project, application and web-server logs, CSV and
JSON data, configuration files, a downloads folder to organise (duplicates, spaces and unicode in names, nested
folders), private keys with the wrong permissions, symbolic links, hidden files, a git repository with history and
pending changes, and in some workspaces a large log file. Everything comes from `random.Random` seeded by the
fixture name, so the same name always gives byte-identical content; the git repository is made with fixed author
dates, so its commit ids are stable too.

`Fixture.tar` is what an episode streams into its sandbox; `Fixture.mode_fixes` are the permission bits that
tar extraction may drop (group/other write, directory modes) and that `load_fixture` puts back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import random
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

GENERATOR_VERSION = 3  # 2: the facts vary per workspace (folders, links, countries, names, modes); 3: hard parts
BASE_TIME = 1_704_067_200  # 2024-01-01T00:00:00Z: fixture mtimes are fixed so `find -newermt` tasks are stable
STANDARD_MODES = {0o644, 0o755}

WORDS = ("alpha", "bravo", "cobalt", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper", "krypton",
         "lumen", "meadow", "nimbus", "orbit", "pepper", "quartz", "raven", "sierra", "tundra", "umber", "vortex",
         "willow", "xenon", "yonder", "zephyr")
AUTHORS = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Ken Thompson",
           "Margaret Hamilton", "Dennis Ritchie", "Frances Allen", "Donald Knuth", "Radia Perlman", "John Backus",
           "Sophie Wilson", "Niklaus Wirth", "Adele Goldberg", "Tony Hoare", "Jean Sammet", "Leslie Lamport")
PEOPLE = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Ken Thompson",
          "Margaret Hamilton", "Dennis Ritchie", "Frances Allen", "Donald Knuth")
COUNTRIES = ("FR", "DE", "JP", "BR", "US", "IN", "KE", "CA", "NO", "MX", "IT", "ES", "PL", "NG", "AR", "AU",
             "SE", "VN", "EG", "CL")
REGIONS = ("north", "south", "east", "west", "central")
PRODUCTS = ("widget", "gadget", "sprocket", "gizmo", "doohickey", "flange", "bracket")
LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
COMPONENTS = ("auth", "db", "cache", "api", "worker", "scheduler")
PATHS = ("/", "/login", "/logout", "/api/items", "/api/users", "/static/app.js", "/static/style.css", "/admin",
         "/health", "/search")
STATUSES = (200, 200, 200, 200, 201, 204, 301, 304, 400, 401, 403, 404, 404, 500, 503)
UNICODE_NAMES = ("résumé.txt", "café menu.txt", "naïve notes.md", "smörgåsbord.csv", "日本語メモ.txt", "Ωmega plan.txt")
DOC_PAGES = ("User Guide.md", "install.md", "FAQ.md", "api reference.md", "changelog.md", "design notes.txt",
             "contributing.md", "release checklist.txt")
DOWNLOADS = ("photo_001.jpg", "photo 002.jpg", "IMG_2291.jpg", "screenshot.png", "diagram final.png", "logo.png",
             "report.pdf", "My Document.pdf", "invoice 0423.pdf", "notes.txt", "todo list.txt", "recipes.md",
             "budget 2024.csv", "contacts.csv", "song.mp3", "podcast episode.mp3", "archive.zip", "backup.tar.gz")
BINARY_SUFFIXES = (".jpg", ".png", ".pdf", ".mp3", ".zip", ".gz")


@dataclass(frozen=True)
class Entry:
    """One file-system entry of a fixture. `kind` is "file", "dir" or "symlink" (then `target` is the link)."""

    path: str
    kind: str = "file"
    data: bytes = b""
    mode: int = 0o644
    mtime: int = BASE_TIME
    target: str = ""


@dataclass
class Fixture:
    """A named, generated file tree and its tar archive."""

    name: str
    entries: list[Entry]
    tar: bytes = b""
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """A short hash of the tar: identifies the exact bytes an episode starts from."""
        return hashlib.sha256(self.tar).hexdigest()[:16]

    @property
    def mode_fixes(self) -> list[tuple[str, int]]:
        """(path, mode) for entries whose mode tar extraction may not restore, deepest first."""
        fixes = [(entry.path, entry.mode) for entry in self.entries
                 if entry.kind != "symlink" and entry.mode not in STANDARD_MODES]
        return sorted(fixes, key=lambda item: (-item[0].count("/"), item[0]))

    def text(self, path: str) -> str:
        """The content of the file at `path` as text (for task generators)."""
        for entry in self.entries:
            if entry.path == path:
                return entry.data.decode("utf-8")
        raise KeyError(f"fixture {self.name} has no file {path!r}")

    def files(self, prefix: str = "") -> list[Entry]:
        """Regular files whose path starts with `prefix`, sorted by path."""
        return sorted((e for e in self.entries if e.kind == "file" and e.path.startswith(prefix)),
                      key=lambda e: e.path)


def pack(entries: list[Entry]) -> bytes:
    """A reproducible tar (PAX, sorted, owner 0, fixed mtimes) of `entries`; parent folders are added."""
    by_path: dict[str, Entry] = {entry.path: entry for entry in entries}
    for entry in list(by_path.values()):
        parts = entry.path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            parent = "/".join(parts[:depth])
            by_path.setdefault(parent, Entry(parent, kind="dir", mode=0o755))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(by_path):
            entry = by_path[path]
            info = tarfile.TarInfo(path)
            info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = entry.mtime, entry.mode, 0, 0, "", ""
            if entry.kind == "dir":
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif entry.kind == "symlink":
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry.target, 0o777
                archive.addfile(info)
            else:
                info.size = len(entry.data)
                archive.addfile(info, io.BytesIO(entry.data))
    return buffer.getvalue()


def _pick(rng: random.Random, items: tuple[str, ...] | list[str], count: int) -> list[str]:
    return rng.sample(list(items), count)


# ----------------------------------------------------------------------------------------------- the parts
def _project(rng: random.Random, out: list[Entry], facts: dict[str, object]) -> None:
    package = rng.choice(WORDS) + "_" + rng.choice(("tools", "core", "lib", "kit"))
    facts["package"] = package
    modules = _pick(rng, ("parser", "models", "utils", "client", "server", "cli", "render", "store", "events"),
                    rng.randint(3, 7))
    out.append(Entry("project/README.md", data=f"# {package}\n\nA small library.\n\n## Usage\n\n"
                     f"    python -m {package}\n\nTODO: write the docs.\n".encode()))
    out.append(Entry("project/pyproject.toml", data=f'[project]\nname = "{package}"\nversion = "0.{rng.randint(1, 9)}.0"\n'
                     f'requires-python = ">=3.9"\n'.encode()))
    out.append(Entry(f"project/src/{package}/__init__.py", data=f'"""{package}."""\n__version__ = "0.1"\n'.encode()))
    todo_files = []
    for module in modules:
        lines = [f'"""The {module} module."""', "", "import os", ""]
        for index in range(rng.randint(2, 6)):
            name = f"{rng.choice(WORDS)}_{module}_{index}"
            lines += [f"def {name}(value):", f'    """Return {name} of value."""']
            if rng.random() < 0.3:
                lines.append("    # TODO: handle the empty case")
                if f"project/src/{package}/{module}.py" not in todo_files:
                    todo_files.append(f"project/src/{package}/{module}.py")
            lines += [f"    return value * {rng.randint(2, 9)}", ""]
        out.append(Entry(f"project/src/{package}/{module}.py", data=("\n".join(lines) + "\n").encode(),
                         mtime=BASE_TIME - rng.randint(0, 90) * 86400))
    # Subpackages, test folders, doc folders and empty folders come and go: the folder count is the fixture's own.
    for subpackage in _pick(rng, ("plugins", "backends", "formats", "io", "compat", "storage"),
                        rng.randint(0, 5)):
        out.append(Entry(f"project/src/{package}/{subpackage}/__init__.py", data=f'"""{subpackage}."""\n'.encode()))
        for index in range(rng.randint(1, 2)):
            out.append(Entry(f"project/src/{package}/{subpackage}/{rng.choice(WORDS)}_{index}.py",
                             data=f"def run():\n    return {rng.randint(1, 99)}\n".encode()))
    test_dirs = rng.choice((["project/tests"], ["project/tests/unit"], ["project/tests/unit", "project/tests/integration"]))
    for position, module in enumerate(modules[:rng.randint(1, 3)]):
        out.append(Entry(f"{test_dirs[position % len(test_dirs)]}/test_{module}.py",
                         data=f"from {package} import {module}\n\n\ndef test_{module}():\n    assert {module}\n".encode()))
    for empty in ("project/build", "project/.cache", "project/src/" + package + "/__pycache__"):
        if rng.random() < 0.3:
            out.append(Entry(empty, kind="dir", mode=0o755))
    facts["todo_files"] = todo_files
    scripts = _pick(rng, ("build", "deploy", "lint", "release", "backup", "clean"), rng.randint(2, 5))
    for index, script in enumerate(scripts):
        mode = 0o755 if index == 0 else 0o644  # the rest lost their exec bit: a permission task fixes them
        out.append(Entry(f"project/scripts/{script}.sh", data=f"#!/bin/sh\necho '{script} done'\n".encode(),
                         mode=mode))
    out.append(Entry("project/.gitignore", data=b"__pycache__/\n*.pyc\nbuild/\n.env\n"))
    out.append(Entry("project/.env", data=f"SECRET_KEY={rng.getrandbits(64):016x}\nDEBUG=1\n".encode()))
    for page in _pick(rng, DOC_PAGES, rng.randint(1, 4)):
        out.append(Entry("project/docs/" + page, data=f"# {page.rsplit('.', 1)[0]}\n\nStart here.\n".encode()))
    out.append(Entry("project/docs/" + rng.choice(UNICODE_NAMES), data="Notes — ünïcödé.\n".encode()))
    for folder in _pick(rng, (".drafts", "api", "images", "archive"), rng.randint(0, 4)):
        name = {".drafts": "outline.md", "api": "endpoints.md", "images": "architecture.png",
                "archive": "old plan.txt"}[folder]
        out.append(Entry(f"project/docs/{folder}/{name}", data=f"{folder}: {rng.choice(WORDS)}\n".encode()))


def _logs(rng: random.Random, out: list[Entry], facts: dict[str, object], large: bool) -> None:
    app_lines, start = [], BASE_TIME - 3 * 86400
    for index in range(rng.randint(150, 300)):
        stamp = start + index * rng.randint(20, 90)
        level, component = rng.choice(LEVELS), rng.choice(COMPONENTS)
        message = rng.choice(("request handled", "cache miss", "connection reset", "retrying job", "slow query",
                              "user logged in", "token expired", "disk usage high"))
        app_lines.append(f"{_iso(stamp)} {level} {component}: {message} id={rng.randint(1000, 9999)}")
    out.append(Entry("logs/app.log", data=("\n".join(app_lines) + "\n").encode()))
    ips = [f"10.{rng.randint(0, 3)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(rng.randint(8, 15))]
    access = []
    for index in range(rng.randint(200, 400)):
        stamp = start + index * rng.randint(5, 40)
        access.append(f'{rng.choice(ips)} - - [{_clf(stamp)}] "{rng.choice(("GET", "GET", "POST", "PUT"))} '
                      f'{rng.choice(PATHS)} HTTP/1.1" {rng.choice(STATUSES)} {rng.randint(120, 9000)}')
    out.append(Entry("logs/access.log", data=("\n".join(access) + "\n").encode()))
    days = sorted(rng.sample(range(1, 29), rng.randint(3, 8)))  # which December days were rotated varies
    facts["old_log_days"] = days
    for day in days:
        body = "\n".join(f"2023-12-{day:02d} INFO rotated entry {n}" for n in range(rng.randint(5, 40))) + "\n"
        hour = rng.choice((1, 3, 6, 9, 10, 15, 18, 21, 23))  # never 12:00, where the mtime task's cut-offs sit
        out.append(Entry(f"logs/old/app-2023-12-{day:02d}.log", data=body.encode(),
                         mtime=BASE_TIME - (32 - day) * 86400 + hour * 3600))
    if large:
        lines, size, index = [], 0, 0
        while size < 1_000_000:
            line = f"{_iso(start + index)} {rng.choice(LEVELS)} {rng.choice(COMPONENTS)}: bulk event {index}"
            lines.append(line)
            size += len(line) + 1
            index += 1
        out.append(Entry("logs/archive/huge.log", data=("\n".join(lines) + "\n").encode(),
                         mtime=BASE_TIME - 60 * 86400))


def _data(rng: random.Random, out: list[Entry], facts: dict[str, object]) -> None:
    rows = ["id,date,region,product,quantity,unit_price"]
    for index in range(1, rng.randint(60, 120)):
        rows.append(f"{index},2024-0{rng.randint(1, 3)}-{rng.randint(1, 28):02d},{rng.choice(REGIONS)},"
                    f"{rng.choice(PRODUCTS)},{rng.randint(1, 50)},{rng.randint(2, 400)}.{rng.choice(('00', '50', '99'))}")
    out.append(Entry("data/sales.csv", data=("\n".join(rows) + "\n").encode()))
    users = []
    countries = _pick(rng, COUNTRIES, rng.randint(2, 14))  # how many countries the users come from varies
    for index in range(1, rng.randint(20, 45)):
        first = rng.choice(PEOPLE).split()[0].lower()
        users.append({"id": index, "name": f"{first}{index}", "email": f"{first}{index}@example.org",
                      "age": rng.randint(18, 70), "country": rng.choice(countries), "active": rng.random() < 0.6})
    out.append(Entry("data/users.json", data=(json.dumps(users, indent=2) + "\n").encode()))
    out.append(Entry("data/" + rng.choice(("inventory.tsv", "stock.tsv")),
                     data=("sku\tcount\n" + "".join(f"SKU-{n:04d}\t{rng.randint(0, 99)}\n" for n in range(25))).encode()))


def _configs(rng: random.Random, out: list[Entry], facts: dict[str, object]) -> None:
    port = rng.choice((8000, 8080, 5000, 3000, 9000))
    out.append(Entry("config/app.ini", data=(
        f"[server]\nhost = 127.0.0.1\nport = {port}\nworkers = {rng.randint(2, 8)}\ndebug = true\n\n"
        f"[database]\nurl = sqlite:///data/app.db\npool_size = {rng.randint(5, 20)}\ntimeout = 30\n\n"
        f"[logging]\nlevel = INFO\nfile = logs/app.log\n").encode(), mode=rng.choice((0o666, 0o664, 0o644))))
    settings = {"name": rng.choice(WORDS), "version": f"1.{rng.randint(0, 20)}",
                "features": {"beta": False, "dark_mode": rng.random() < 0.5, "telemetry": True},
                "retries": rng.randint(1, 5), "allowed_hosts": ["localhost", f"{rng.choice(WORDS)}.example.org"]}
    out.append(Entry("config/settings.json", data=(json.dumps(settings, indent=2) + "\n").encode(),
                     mode=rng.choice((0o666, 0o644))))
    out.append(Entry("config/nginx.conf", data=(
        "server {\n    listen 80;\n    server_name example.org;\n    root /srv/www;\n\n"
        f"    location /api {{\n        proxy_pass http://127.0.0.1:{port};\n    }}\n}}\n").encode(), mode=0o664))
    out.append(Entry("config/.env.example", data=b"DATABASE_URL=\nAPI_KEY=\n"))
    facts["port"] = port


def _downloads(rng: random.Random, out: list[Entry], facts: dict[str, object]) -> None:
    blobs = [bytes(rng.getrandbits(8) for _ in range(rng.randint(200, 2000))) for _ in range(6)]
    texts = [name for name in DOWNLOADS if not name.endswith(BINARY_SUFFIXES)]
    names = _pick(rng, texts, rng.randint(1, 3))  # at least one text file: a content search needs one
    names += _pick(rng, [name for name in DOWNLOADS if name not in texts], rng.randint(4, 9))
    rng.shuffle(names)
    for index, name in enumerate(names):
        data = blobs[index % len(blobs)] if name.endswith(BINARY_SUFFIXES) else \
            f"{name} keyword-{rng.choice(WORDS)}\n".encode()
        out.append(Entry(f"downloads/{name}", data=data, mtime=BASE_TIME - rng.randint(1, 200) * 86400))
    out.append(Entry("downloads/nested/deep/copy of photo.jpg", data=blobs[0]))
    out.append(Entry("downloads/.hidden_cache", data=b"cache\n"))


def _secrets(rng: random.Random, out: list[Entry], facts: dict[str, object]) -> None:
    out.append(Entry("secrets", kind="dir", mode=0o755))
    out.append(Entry("secrets/id_rsa", data=f"-----BEGIN KEY-----\n{rng.getrandbits(256):064x}\n-----END KEY-----\n"
                     .encode(), mode=0o644))
    out.append(Entry("secrets/api.token", data=f"{rng.getrandbits(128):032x}\n".encode(),
                     mode=rng.choice((0o666, 0o644, 0o646))))
    out.append(Entry("secrets/db.password", data=f"{rng.choice(WORDS)}{rng.randint(100, 999)}\n".encode(),
                     mode=0o640))


def _links(rng: random.Random, out: list[Entry]) -> None:
    """Symbolic links: `current.log -> logs/app.log` always (tools' tests list it), the others come and go with
    names and targets of their own, one of them dangling. None sits where a task moves, packs or chmods files
    (downloads/, logs/old/, secrets/, project/scripts/, repo/, bin/)."""
    out.append(Entry("current.log", kind="symlink", target="logs/app.log"))
    choices = [
        (rng.choice(("latest", "inbox", "dl")), "downloads"),
        ("logs/" + rng.choice(("latest-access.log", "web.log", "requests.log")), "access.log"),
        ("data/" + rng.choice(("users-latest.json", "people.json", "accounts.json")), "users.json"),
        ("data/" + rng.choice(("sales-current.csv", "orders.csv")), "sales.csv"),
        ("config/" + rng.choice(("active.ini", "current.ini", "live.ini")), "app.ini"),
        ("project/" + rng.choice(("docs-link", "manual", "handbook")), "docs"),
        ("logs/" + rng.choice(("previous.log", "rotated.log", "yesterday.log")),
         "old/app-2023-11-" + rng.choice(("29", "30")) + ".log"),  # dangling: that file was deleted long ago
        ("shortcuts/" + rng.choice(("app.ini", "server-config")), "../config/app.ini"),
    ]
    for path, target in choices:
        if rng.random() < 0.45:
            out.append(Entry(path, kind="symlink", target=target))


def _repo(rng: random.Random, facts: dict[str, object]) -> list[Entry]:
    """A git repository with a few commits by different authors, a modified file and an untracked one."""
    from agentgym_cli.data.history import drop_git_extras

    authors = _pick(rng, AUTHORS, rng.randint(2, 4))
    with tempfile.TemporaryDirectory(prefix="agentgym-cli-repo-") as temporary:
        root = Path(temporary) / "repo"
        root.mkdir()
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": temporary, "LC_ALL": "C",
                       "GIT_CONFIG_NOSYSTEM": "1", "TZ": "UTC"}

        def git(*args: str, author: str = "Ada Lovelace", when: int = BASE_TIME) -> str:
            env = dict(environment, GIT_AUTHOR_NAME=author, GIT_COMMITTER_NAME=author,
                       GIT_AUTHOR_EMAIL=author.split()[0].lower() + "@example.org",
                       GIT_COMMITTER_EMAIL=author.split()[0].lower() + "@example.org",
                       GIT_AUTHOR_DATE=f"@{when} +0000", GIT_COMMITTER_DATE=f"@{when} +0000")
            done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True)
            return done.stdout.strip()

        git("init", "-q", "-b", "main")
        git("config", "user.name", "Agent")
        git("config", "user.email", "agent@example.org")
        files = {"README.md": "# Service\n", "app.py": "print('hello')\n", "debug.log": "debug output\n"}
        commits = []
        when = BASE_TIME - 30 * 86400
        for path, text in files.items():
            (root / path).write_text(text)
            git("add", path)
            author = rng.choice(authors)
            git("commit", "-q", "-m", f"Add {path}", author=author, when=when)
            commits.append((author, f"Add {path}"))
            when += 3600 * rng.randint(1, 48)
        for index in range(rng.randint(1, 9)):
            path = rng.choice(("app.py", "README.md"))
            with (root / path).open("a") as handle:
                handle.write(f"# change {index}\n")
            author = rng.choice(authors)
            subject = f"Update {path} ({rng.choice(WORDS)})"
            git("commit", "-q", "-am", subject, author=author, when=when)
            commits.append((author, subject))
            when += 3600 * rng.randint(1, 48)
        (root / "app.py").write_text((root / "app.py").read_text() + "print('work in progress')\n")
        (root / "TODO.txt").write_text("- finish the release\n")
        git("read-tree", "HEAD")  # an index without stat data: the same bytes on every machine
        git("repack", "-a", "-d", "-q")  # one pack instead of dozens of loose objects: a smaller, faster tar
        git("prune-packed")
        facts["repo_commits"] = commits
        facts["repo_head"] = git("rev-parse", "HEAD")
        drop_git_extras(root / ".git")
        entries = []
        for item in sorted(root.rglob("*")):
            relative = "repo/" + item.relative_to(root).as_posix()
            if item.is_dir():
                entries.append(Entry(relative, kind="dir", mode=0o755))
            else:
                executable = item.stat().st_mode & 0o100
                entries.append(Entry(relative, data=item.read_bytes(), mode=0o755 if executable else 0o644))
    return entries


def _hard_parts(rng: random.Random, out: list[Entry], facts: dict[str, object]) -> None:
    """What the hard families work on, each from its own module: export files with malformed records
    (`exports.py`), awkwardly named files (`inbox.py`, in `incoming/`), modules with planted bugs (`programs.py`),
    a long git history (`history.py`), a service tree with modes to fix (`service.py`)."""
    from agentgym_cli.data.exports import build_exports
    from agentgym_cli.data.history import build_history
    from agentgym_cli.data.inbox import build_inbox
    from agentgym_cli.data.programs import PROGRAMS, files_of, plant
    from agentgym_cli.data.service import build_service

    files, export_facts = build_exports(rng)
    out.extend(Entry(file.path, data=file.data, mtime=BASE_TIME - 86400) for file in files)
    facts.update({f"exports_{key}": value for key, value in export_facts.items()})
    inbox, inbox_facts = build_inbox(rng, BASE_TIME)
    out.extend(Entry(path, data=data, mtime=mtime) for path, data, mtime in inbox)
    facts.update(inbox_facts)
    facts["programs"] = [plant(rng, kind) for kind in rng.sample(sorted(PROGRAMS), 2)]
    for planted in facts["programs"]:  # type: ignore[attr-defined]
        out.extend(Entry(path, data=text.encode()) for path, text in files_of(planted).items())
    history, history_facts = build_history(rng, _pick(rng, AUTHORS, rng.randint(2, 5)), BASE_TIME)
    out.extend(Entry(path, data=data) for path, data in history.items())
    facts.update(history_facts)
    service, service_facts = build_service(rng)
    out.extend(Entry(path, kind=kind, data=data, mode=mode, target=target) for path, kind, data, mode, target in service)
    facts.update(service_facts)


def _iso(stamp: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _clf(stamp: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%d/%b/%Y:%H:%M:%S +0000")


# ----------------------------------------------------------------------------------------------- public API
def workspace_name(seed: int, index: int) -> str:
    """The name of workspace `index` of `seed`, such as "ws-s0-007"."""
    return f"ws-s{seed}-{index:03d}"


def build_workspace(seed: int, index: int) -> Fixture:
    """Generate workspace `index` of `seed` (deterministic; about 100 entries, their number and facts
    varying; every fifth has a 1 MB log)."""
    name = workspace_name(seed, index)
    rng = random.Random(f"agentgym-cli:{GENERATOR_VERSION}:{name}")
    entries: list[Entry] = []
    facts: dict[str, object] = {}
    _project(rng, entries, facts)
    _logs(rng, entries, facts, large=index % 5 == 2)
    _data(rng, entries, facts)
    _configs(rng, entries, facts)
    _downloads(rng, entries, facts)
    _secrets(rng, entries, facts)
    _links(rng, entries)
    entries.extend(_repo(rng, facts))
    _hard_parts(random.Random(f"agentgym-cli:{GENERATOR_VERSION}:{name}:hard"), entries, facts)
    loose = {"data/sales.csv", "logs/access.log", "project/.env", "project/README.md"}
    entries = [dataclasses.replace(e, mode=0o666) if e.path in loose and rng.random() < 0.25 else e
               for e in entries]  # a few more world-writable files, different ones per workspace
    links = {e.path for e in entries if e.kind == "symlink"}
    clash = next((e.path for e in entries if any(e.path.startswith(link + "/") for link in links)), None)
    if clash is not None:
        raise ValueError(f"workspace {name}: {clash} lies below a symbolic link; rename the part that made it")
    fixture = Fixture(name=name, entries=entries, facts=facts)
    fixture.tar = pack(entries)
    return fixture


def cache_root() -> Path:
    """Where generated fixtures and task sets are cached (`$AGENTGYM_CACHE/cli`)."""
    from agentgym.cache import cache_dir

    return cache_dir("cli")


_MEMORY: dict[str, Fixture] = {}


def get_workspace(name: str) -> Fixture:
    """The workspace called `name` ("ws-sSEED-INDEX"), generated once per process."""
    fixture = _MEMORY.get(name)
    if fixture is None:
        try:
            _, seed_part, index_part = name.split("-")
            seed, index = int(seed_part[1:]), int(index_part)
        except ValueError:
            raise KeyError(f"{name!r} is not a workspace name such as 'ws-s0-007'") from None
        fixture = _MEMORY[name] = build_workspace(seed, index)
    return fixture


def fixture_from_tar(name: str, tar_bytes: bytes) -> Fixture:
    """A fixture made from an existing archive (importers): entries are read back for mode fixes."""
    entries = []
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as archive:
        for member in archive.getmembers():
            path = member.name[2:] if member.name.startswith("./") else member.name.lstrip("/")
            path = "" if path in (".", "") else path
            if not path:
                continue
            kind = "dir" if member.isdir() else "symlink" if member.issym() else "file"
            entries.append(Entry(path, kind=kind, mode=member.mode & 0o7777, target=member.linkname))
    return Fixture(name=name, entries=entries, tar=tar_bytes)
