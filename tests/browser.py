"""A headless Chromium for tests, driven over the DevTools protocol (a websocket, JSON messages).

Just enough of the protocol to open a page, record every console message,
uncaught exception and network request, evaluate an expression and take a
screenshot. Debian's ``chromium`` package provides the browser (``.ci/run``
installs it).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",  # the browser picks a free port and writes it to DevToolsActivePort
)


def chromium_binary() -> str:
    """The Chromium executable; a clear failure when it is not installed."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("headless Chromium is needed for this test: apt-get install -y chromium")


@dataclass
class PageLoad:
    """What happened while a page loaded: console messages, exceptions, requests, and values asked for."""

    console: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        return [text for level, text in self.console if level in ("error", "assert")] + self.exceptions


class Page:
    """One tab of a running browser."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its answer, keeping the events that arrive meanwhile."""
        self._next += 1
        ident = self._next
        self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=60))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    def wait_for(self, event: str) -> None:
        """Wait (bounded by the socket's timeout) until ``event`` has arrived."""
        while not any(e.get("method") == event for e in self.events):
            self.events.append(json.loads(self._socket.recv(timeout=60)))

    def load(
        self, url: str, expressions: dict[str, str], screenshot: Path | None = None, full_page: bool = True
    ) -> PageLoad:
        """Open ``url``, wait for its load event, evaluate ``expressions`` and take a screenshot: of the whole
        page, or (``full_page`` False) of the first screen, what a reader sees before scrolling. One tab can
        load page after page: each load reports only its own events."""
        self.events = []
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        found = PageLoad()
        for name, expression in expressions.items():
            result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
            found.values[name] = result.get("result", {}).get("value")
        if screenshot is not None:
            metrics = self.call("Page.getLayoutMetrics")
            size = metrics["cssContentSize"] if full_page else metrics["cssLayoutViewport"]
            width, height = size.get("width", size.get("clientWidth")), size.get("height", size.get("clientHeight"))
            clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
            shot = self.call("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=full_page)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                found.console.append((params.get("type", ""), text))
            elif event.get("method") == "Log.entryAdded":
                entry = params.get("entry", {})
                found.console.append((entry.get("level", ""), entry.get("text", "")))
            elif event.get("method") == "Runtime.exceptionThrown":
                found.exceptions.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif event.get("method") == "Network.requestWillBeSent":
                found.requests.append(params.get("request", {}).get("url", ""))
        return found


@contextmanager
def headless_chromium(profile: Path, width: int = 1280, height: int = 1000) -> Iterator[Page]:
    """A fresh headless Chromium (its own profile folder), one blank tab; killed with its group afterwards."""
    profile.mkdir(parents=True, exist_ok=True)
    command = [chromium_binary(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]
    process = subprocess.Popen(
        [*command, "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "DBUS_SESSION_BUS_ADDRESS": "disabled:"},
    )
    try:
        port = _devtools_port(profile, process)
        with connect(_page_socket(port), max_size=None, open_timeout=30) as socket:
            yield Page(socket)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _devtools_port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    marker = profile / "DevToolsActivePort"
    for _ in range(600):  # bounded wait for the browser to start (not a timing assertion)
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode} before it listened")
        time.sleep(0.05)
    raise RuntimeError("chromium did not open its DevTools port")


def _page_socket(port: int) -> str:
    for _ in range(200):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            targets = json.loads(answer.read())
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            return str(pages[0]["webSocketDebuggerUrl"])
        time.sleep(0.05)
    raise RuntimeError("chromium opened no page")
