"""A real, tiny OpenAI-compatible chat-completions server for the HTTP grader's tests.

Not a mock object: a ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) that the grader
reaches over TCP with httpx, exactly as it reaches vLLM or OpenAI. It answers
deterministically from the prompt the grader sends:

- a multiple-choice question: the letter of the first choice whose text occurs in the
  passage, else ``UNANSWERABLE``;
- a free question: the passage's first line, or ``UNANSWERABLE`` for an empty passage.

The first path segment picks a behaviour, so one server serves every error case:
``/ok/v1`` as above; ``/auth/v1`` the same but 401 without ``Bearer secret``; ``/fail/v1``
always HTTP 503; ``/picky/v1`` HTTP 503 for a passage with the word "poison", else ok;
``/flaky/v1`` HTTP 500 for the first request of each prompt, then ok;
``/garbage/v1`` a JSON body without ``choices``; ``/chatty/v1`` a sentence instead of a
letter; ``/slow/v1`` answers after 2 s; ``/lag/v1`` after 20 ms (a model's latency, for
benchmarks/exam.py); ``/missing/v1`` HTTP 404.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_CHOICE = re.compile(r"^([A-Z])\. (.*)$", re.M)


def answer(content: str) -> str:
    """The server's deterministic answer to one prompt (module docstring)."""
    passage = content.split("Passage:\n", 1)[1].split("\n\nQuestion: ", 1)[0]
    if "\nChoices:\n" in content:
        for letter, choice in _CHOICE.findall(content.split("\nChoices:\n", 1)[1]):
            if choice in passage:
                return letter
        return "UNANSWERABLE"
    first = passage.strip().split("\n", 1)[0]
    return first or "UNANSWERABLE"


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True  # closing does not wait for the /slow handler the client gave up on
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (the timeout test) breaks the pipe: expected here


class ChatServer:
    """Start with ``with ChatServer() as server:``; ``server.url(mode)`` is a base URL."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()  # mode -> requests received
        self.seen: Counter[str] = Counter()  # prompt -> times seen (for /flaky)
        self.lock = threading.Lock()
        self.httpd = _Quiet(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, mode: str = "ok") -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{mode}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet test output
                pass

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                mode, _, rest = self.path.strip("/").partition("/")
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = request["messages"][0]["content"]
                with server.lock:
                    server.requests[mode] += 1
                    server.seen[content] += 1
                    first = server.seen[content] == 1
                if rest != "v1/chat/completions" or mode == "missing":
                    return self._send(404, {"error": "not found"})
                if mode == "auth" and self.headers.get("Authorization") != "Bearer secret":
                    return self._send(401, {"error": "invalid api key"})
                if mode == "fail" or (mode == "flaky" and first) or (mode == "picky" and "poison" in content):
                    return self._send(503 if mode == "fail" else 500, {"error": "overloaded"})
                if mode == "garbage":
                    return self._send(200, {"oops": 1})
                if mode in ("slow", "lag"):
                    time.sleep(2 if mode == "slow" else 0.02)
                reply = "I believe the answer is B, because" if mode == "chatty" else answer(content)
                self._send(200, {"id": "x", "object": "chat.completion", "model": request["model"],
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                              "finish_reason": "stop"}]})

        return Handler
