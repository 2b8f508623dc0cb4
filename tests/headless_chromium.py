"""A page opened in headless Chromium through the DevTools protocol, for the report tests.

A small client of our own rather than selenium: one websocket (PyPI `websockets`), the four
DevTools domains the checks need, a deadline on every wait, and the browser's whole process
group killed on the way out whatever happened (Chromium forks a zygote and renderers).
"""

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from websockets.sync.client import connect

STARTUP_TIMEOUT_S = 60  # guards against a hung browser, never an expectation of speed
PAGE_TIMEOUT_S = 60
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageVisit:
    """What the page did while it loaded, and what it holds once loaded."""

    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    failed_requests: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # resolved href of every <a>
    anchors: list[str] = field(default_factory=list)  # ids present in the page
    screenshot_png: bytes = b""
    # layout at the window's width (issue 25: a page a person reads at 1280 px)
    viewport_width: int = 0  # the page's visible width, without the scroll bar
    scroll_width: int = 0  # the document's: larger means a horizontal scroll
    overflowing: list[str] = field(default_factory=list)  # elements past the right edge
    findings: list[str] = field(default_factory=list)  # the text of each finding
    warning_kinds: list[str] = field(default_factory=list)  # data-kind of each warning line
    visible_warning_details: int = 0  # per-point warnings shown without opening a line

    @property
    def network_requests(self) -> list[str]:
        return [url for url in self.requests if not url.startswith(LOCAL_SCHEMES)]


class DevTools:
    """Commands and events over one DevTools websocket, flattened sessions."""

    def __init__(self, socket, profile: Path):
        self.socket = socket
        self.profile = profile  # the user data directory: on the browser's command line
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, params=None, session: str | None = None, timeout_s=PAGE_TIMEOUT_S):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        reply = self._until(lambda m: m.get("id") == self.next_id, timeout_s, method)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_event(self, method: str, timeout_s=PAGE_TIMEOUT_S) -> dict:
        for position, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(position)
        return self._until(lambda m: m.get("method") == method, timeout_s, method, keep=False)

    def _until(self, wanted, timeout_s: float, what: str, keep: bool = True) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer from Chromium to {what} in {timeout_s:.0f} s")
            message = json.loads(self.socket.recv(timeout=left))
            if wanted(message):
                return message
            if "method" in message:
                self.events.append(message)


@contextlib.contextmanager
def headless_chromium():
    """A running headless Chromium's DevTools connection; the browser is gone on exit."""
    # in /tmp itself, whatever TMPDIR says: its singleton socket's path must fit in 108 bytes
    profile = Path(tempfile.mkdtemp(prefix="pgcachelab-chromium-", dir="/tmp"))
    # Chromium keeps its singleton socket in $TMPDIR and, killed, leaves it there: inside the
    # profile it goes away with it.
    scratch = profile / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [
            chromium_path(), "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--disable-default-apps", "--mute-audio",
            "--remote-debugging-port=0", "--remote-allow-origins=*",
            f"--user-data-dir={profile}", "--window-size=1280,1000", "about:blank",
        ],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(scratch)},
        start_new_session=True,  # its own process group: killed as one below
    )  # fmt: skip
    try:
        url = _browser_url(profile, process)
        with connect(url, max_size=None, open_timeout=STARTUP_TIMEOUT_S) as socket:
            yield DevTools(socket, profile)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _browser_url(profile: Path, process: subprocess.Popen) -> str:
    """Chromium writes the port it chose and the browser's path to DevToolsActivePort."""
    active = profile / "DevToolsActivePort"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode} before it listened")
        lines = active.read_text().split() if active.exists() else []
        if len(lines) >= 2:
            return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        time.sleep(0.1)
    raise TimeoutError(f"chromium did not open its DevTools port in {STARTUP_TIMEOUT_S} s")


_PAGE_FACTS = """JSON.stringify({
  broken: Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)
               .map(i => i.currentSrc || i.src),
  links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
  anchors: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
  width: document.documentElement.scrollWidth,
  height: document.documentElement.scrollHeight,
  viewport: document.documentElement.clientWidth,
  overflowing: Array.from(document.body.querySelectorAll('*'))
    .filter(e => e.getClientRects().length
                 && e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .map(e => e.tagName + ': ' + (e.textContent || '').trim().slice(0, 60)),
  findings: Array.from(document.querySelectorAll('#findings li.finding'))
    .map(e => e.innerText.split('\\n')[0]),
  warningKinds: Array.from(document.querySelectorAll('.warning-kind'))
    .filter(e => e.checkVisibility()).map(e => e.dataset.kind),
  visibleDetails: Array.from(document.querySelectorAll('.warning-details li'))
    .filter(e => e.checkVisibility()).length,
})"""


def visit(devtools: DevTools, page: Path, max_screenshot_height: int = 12000) -> PageVisit:
    """Open `page` in a new tab; what it logged and fetched, its images, links and a
    full-page screenshot."""
    target = devtools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = devtools.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    for domain in ("Page", "Runtime", "Log", "Network"):
        devtools.call(f"{domain}.enable", session=session)
    devtools.events.clear()
    devtools.call("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    devtools.wait_event("Page.loadEventFired")
    facts = json.loads(
        devtools.call(
            "Runtime.evaluate", {"expression": _PAGE_FACTS, "returnByValue": True}, session
        )["result"]["value"]
    )
    width, height = facts["width"], min(facts["height"], max_screenshot_height)
    shot = devtools.call(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True,
         "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
        session,
    )  # fmt: skip
    result = PageVisit(
        broken_images=facts["broken"], links=facts["links"], anchors=facts["anchors"],
        screenshot_png=base64.b64decode(shot["data"]), viewport_width=facts["viewport"],
        scroll_width=facts["width"], overflowing=facts["overflowing"],
        findings=facts["findings"], warning_kinds=facts["warningKinds"],
        visible_warning_details=facts["visibleDetails"],
    )  # fmt: skip
    for event in devtools.events:
        _record(event, result)
    devtools.call("Target.closeTarget", {"targetId": target})
    return result


def _record(event: dict, result: PageVisit) -> None:
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        texts = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
        result.console_errors.append(" ".join(texts))
    elif method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        result.console_errors.append(
            details.get("exception", {}).get("description") or details.get("text", "")
        )
    elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        entry = params["entry"]
        result.console_errors.append(f"{entry.get('text')} ({entry.get('url', '')})")
    elif method == "Network.requestWillBeSent":
        result.requests.append(params["request"]["url"])
    elif method == "Network.loadingFailed":
        result.failed_requests.append(f"{params.get('errorText')} ({params.get('requestId')})")
