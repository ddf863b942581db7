"""A real headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``).

Why a pipe: no WebSocket client is needed (the protocol's messages are JSON, each ended by a NUL
byte, written to the browser's fd 3 and read from its fd 4). Enough for a test to open a page,
read it with ``Runtime.evaluate`` and press keys with ``Input.dispatchKeyEvent``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from browser_helpers import chromium


class Browser:
    def __init__(self, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child's fd 3 reads our commands, its fd 4 writes the answers
        self.process = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: (os.dup2(to_browser_r, 3), os.dup2(from_browser_w, 4)))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if self.session and not browser:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise AssertionError("chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": url}, browser=True)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 browser=True)["sessionId"]

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})

    def js(self, expression: str) -> Any:
        return self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")

    def wait_for(self, expression: str, bound: float = 60.0) -> Any:
        """Poll ``expression`` until it is truthy (a hang bound, not a timing assertion)."""
        end = time.monotonic() + bound
        while time.monotonic() < end:
            try:
                value = self.js(expression)
            except AssertionError:  # the page is being replaced
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"never true in the page: {expression}")

    def key(self, key: str, code: str, *, shift: bool = False) -> None:
        vk = ord(key.upper()) if len(key) == 1 and key.isalpha() else ord(code[-1]) if code.startswith("Digit") else 0
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": 8 if shift else 0}
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", **base, "text": key})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def close(self) -> None:
        try:
            self.send("Browser.close", browser=True)
        except AssertionError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
