"""The viewer's HTTP server: the standard library's threading server, bound to 127.0.0.1 only.

Routes, under `/TOKEN/` (a random token made at start, printed in the address): `` (the page), `api/rows`
(every run's episode index), `api/plots?run=R`, `api/episode?run=R&index=I` (one episode, read from disk when
asked, with its gold looked up in the env's task set). The token keeps the gold away from any other local
process that can reach 127.0.0.1 (a weakly isolated sandbox of a training run, say): anything else is a 404. Responses carry a
Content-Security-Policy and `nosniff`; nothing is written.
"""

from __future__ import annotations

import json
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from agentgym.viewer.gold import GoldLookup
from agentgym.viewer.page import episode_payload, page, plots_document, rows_payload
from agentgym.viewer.runs import Run

HOST = "127.0.0.1"
# the page's own <meta> policy names its script's nonce; the header adds what a <meta> policy cannot say
PAGE_POLICY = "frame-ancestors 'none'; object-src 'none'; base-uri 'none'"
PLOTS_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'; sandbox"
API_POLICY = "default-src 'none'; sandbox"


class ViewerServer(ThreadingHTTPServer):
    """Serves the page over `runs`. The page (with its plots) is built once, on the first request."""

    daemon_threads = True

    def __init__(self, runs: list[Run], port: int = 0) -> None:
        self.runs = runs
        self._page: bytes | None = None
        self._rows: bytes | None = None
        self._plots: dict[int, bytes] = {}
        self._lock = threading.Lock()
        self.gold = GoldLookup()
        self.token = secrets.token_urlsafe(16)
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        """The page's address; its path holds the server's secret token (see the module docstring)."""
        return f"http://{HOST}:{self.server_address[1]}/{self.token}/"

    def page_bytes(self) -> bytes:
        with self._lock:
            if self._page is None:
                self._page = page(self.runs, nonce=secrets.token_urlsafe(16)).encode("utf-8")
            return self._page

    def rows_bytes(self) -> bytes:
        with self._lock:
            if self._rows is None:
                self._rows = json.dumps(rows_payload(self.runs), ensure_ascii=False).encode("utf-8")
            return self._rows

    def plots_bytes(self, index: int) -> bytes:
        with self._lock:
            if index not in self._plots:
                self._plots[index] = plots_document(self.runs[index]).encode("utf-8")
            return self._plots[index]

    def start_in_thread(self) -> threading.Thread:
        """Serve in a daemon thread (tests, notebooks); stop with `shutdown()` then `server_close()`."""
        thread = threading.Thread(target=self.serve_forever, name="agentgym-view", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return  # a local viewer has no use for an access log on the terminal

    def _send(self, status: HTTPStatus, body: bytes, content_type: str, policy: str = API_POLICY) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", policy)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, message.encode("utf-8"), "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        url = urlparse(self.path)
        prefix = f"/{self.server.token}"
        if url.path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            return
        if url.path == prefix:
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)
            self.send_header("Location", prefix + "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if not url.path.startswith(prefix + "/"):
            self._error(HTTPStatus.NOT_FOUND, "open the address `agentgym view` printed (its path holds a token)")
            return
        url = url._replace(path=url.path[len(prefix):])
        if url.path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, self.server.page_bytes(), "text/html; charset=utf-8", PAGE_POLICY)
        elif url.path == "/api/rows":
            self._send(HTTPStatus.OK, self.server.rows_bytes(), "application/json")
        elif url.path == "/api/plots":
            try:
                run_index = int(parse_qs(url.query).get("run", [""])[0])
            except ValueError:
                self._error(HTTPStatus.BAD_REQUEST, "give run=R as an integer")
                return
            if not 0 <= run_index < len(self.server.runs):
                self._error(HTTPStatus.NOT_FOUND, f"there are runs 0..{len(self.server.runs) - 1}, not {run_index}")
                return
            self._send(HTTPStatus.OK, self.server.plots_bytes(run_index), "text/html; charset=utf-8",
                       PLOTS_POLICY)
        elif url.path == "/api/episode":
            query = parse_qs(url.query)
            try:
                run_index = int(query.get("run", [""])[0])
                episode_index = int(query.get("index", [""])[0])
                if not 0 <= run_index < len(self.server.runs):
                    raise IndexError(f"there are runs 0..{len(self.server.runs) - 1}, not {run_index}")
                payload = episode_payload(self.server.runs[run_index], episode_index, self.server.gold)
            except ValueError:
                self._error(HTTPStatus.BAD_REQUEST, "give run=R&index=I as integers")
                return
            except IndexError as error:
                self._error(HTTPStatus.NOT_FOUND, str(error))
                return
            body = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
            self._send(HTTPStatus.OK, body, "application/json")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no page {url.path}; open {prefix}/")
