"""A small Chrome DevTools Protocol client for the page tests, stdlib only.

Chromium is started with --remote-debugging-pipe: it reads commands from
fd 3 and writes replies and events to fd 4, each a JSON text ended by a NUL.
No port is opened and nothing else is needed (no websocket, no npm).

    with Browser.start() as b:
        page = b.new_page()
        page.goto("file:///tmp/x.html")
        page.eval("document.title")

Every page records what a test wants to assert on afterwards: console
errors and uncaught exceptions (page.errors), every network request that
left the page (page.requests) and JavaScript dialogs (page.dialogs).
"""

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

from nulldev import null

CANDIDATES = ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"]

# No network whatsoever: nothing in the background, and every request that
# would leave the machine goes to a proxy that is not there (port 9, discard).
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--no-first-run",
    "--no-default-browser-check", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
    "--window-size=1280,800", "--remote-debugging-pipe",
]


def find_chromium():
    for c in CANDIDATES:
        if os.access(c, os.X_OK):
            return c
    return shutil.which("chromium")


class CDPError(Exception):
    pass


class Browser(object):
    def __init__(self, proc, to_fd, from_fd, profile_dir):
        self.proc = proc
        self.to_fd = to_fd
        self.from_fd = from_fd
        self.profile_dir = profile_dir
        self.buf = b""
        self.next_id = 0
        self.pages = {}       # session id -> Page

    @classmethod
    def start(cls, exe=None, timeout=30):
        exe = exe or find_chromium()
        if not exe:
            raise CDPError("chromium not found")
        profile = tempfile.mkdtemp(prefix="pbp-chromium-")
        to_r, to_w = os.pipe()       # us -> browser (its fd 3)
        from_r, from_w = os.pipe()   # browser -> us (its fd 4)

        def fds():
            # Fresh duplicates first, so dup2 never meets a pipe already at 3 or 4
            # (dup2 onto itself would keep close-on-exec).
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        log = open(os.path.join(profile, "chromium.log"), "w")
        try:
            proc = subprocess.Popen([exe] + FLAGS + ["--user-data-dir=" + profile, "about:blank"],
                                    stdin=null(), stdout=log, stderr=log,
                                    close_fds=False, preexec_fn=fds, start_new_session=True)
        finally:
            log.close()
            os.close(to_r)
            os.close(from_w)
        b = cls(proc, to_w, from_r, profile)
        try:
            b.call("Browser.getVersion", timeout=timeout)
        except Exception:
            b.close()
            raise
        return b

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def log_tail(self):
        try:
            with open(os.path.join(self.profile_dir, "chromium.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("Browser.close")
                self.proc.wait(timeout=10)
            except Exception:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self.proc.wait()
        for fd in (self.to_fd, self.from_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile_dir, ignore_errors=True)

    # -- wire

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.to_fd, data):]
        return self.next_id

    def _read(self, deadline):
        """One message, or None at the deadline."""
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_fd], [], [], left)
            if ready:
                chunk = os.read(self.from_fd, 1 << 20)
                if not chunk:
                    raise CDPError("chromium closed the pipe (exit %s)\n%s" % (
                        self.proc.poll(), self.log_tail()))
                self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def _dispatch(self, msg):
        page = self.pages.get(msg.get("sessionId"))
        if page is not None and "method" in msg:
            page.on_event(msg["method"], msg.get("params", {}))

    def call(self, method, params=None, session=None, timeout=30):
        want = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if msg is None:
                raise CDPError("%s: no answer in %gs" % (method, timeout))
            if msg.get("id") == want:
                if "error" in msg:
                    raise CDPError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self._dispatch(msg)

    def pump(self, seconds):
        """Handle events for a while."""
        deadline = time.monotonic() + seconds
        while True:
            msg = self._read(deadline)
            if msg is None:
                return
            self._dispatch(msg)

    def new_page(self, width=1280, height=800):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        self.pages[session] = page
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(domain + ".enable")
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page


class Page(object):
    def __init__(self, browser, target, session):
        self.browser = browser
        self.target = target
        self.session = session
        self.errors = []      # console errors and exceptions, as text
        self.requests = []    # URLs the page asked for
        self.dialogs = []     # alert/confirm/prompt messages
        self.loaded = False

    def call(self, method, params=None, timeout=30):
        return self.browser.call(method, params, self.session, timeout)

    def on_event(self, method, p):
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: %s %s" % (
                d.get("text", ""), d.get("exception", {}).get("description", "")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            self.errors.append("log: %s" % p["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            self.requests.append(p.get("request", {}).get("url", ""))
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(p.get("message", ""))
            self.browser.send("Page.handleJavaScriptDialog", {"accept": False}, self.session)
        elif method == "Page.loadEventFired":
            self.loaded = True

    def goto(self, url, timeout=30):
        self.loaded = False
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + timeout
        while not self.loaded:
            if time.monotonic() > deadline:
                raise CDPError("%s did not load in %gs" % (url, timeout))
            self.browser.pump(0.05)

    def eval(self, expr, timeout=30):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError("%s: %s" % (expr[:80], d.get("exception", {}).get("description", d.get("text"))))
        return r.get("result", {}).get("value")

    def wait_for(self, expr, timeout=30):
        """Poll a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.monotonic() > deadline:
                raise CDPError("timed out waiting for %s" % expr)
            self.browser.pump(0.05)

    def mouse(self, kind, x, y, button="none", clicks=0):
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                               "button": button, "clickCount": clicks})

    def hover(self, x, y):
        self.mouse("mouseMoved", x, y)

    def click(self, x, y):
        self.hover(x, y)
        self.mouse("mousePressed", x, y, "left", 1)
        self.mouse("mouseReleased", x, y, "left", 1)

    def click_selector(self, selector):
        r = self.eval("(() => { const r = document.querySelector(%s).getBoundingClientRect();"
                      " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % json.dumps(selector))
        self.click(*r)

    def type_into(self, selector, text):
        self.click_selector(selector)
        self.call("Input.insertText", {"text": text})

    def key(self, key, code=None, keycode=0):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code or key,
                                                 "windowsVirtualKeyCode": keycode})

    def screenshot(self, path, full_page=False):
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params, timeout=60)["data"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        self.browser.pages.pop(self.session, None)
        try:
            self.browser.call("Target.closeTarget", {"targetId": self.target})
        except CDPError:
            pass
