"""A minimal Chrome DevTools Protocol client for the console tests: starts
headless Chromium (Debian's `chromium`) on a free debugging port, attaches to
its page over a websocket (python3-websocket) and collects JavaScript
exceptions and console errors as they happen. Used by console_check.py and
test/bench/console_bench.py. Bounded: every wait has a deadline."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket


class Browser:
    def __init__(self, width=1280, height=800):
        self.tmp = tempfile.mkdtemp(prefix="skiff-chromium-")
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise RuntimeError("chromium not installed (etc/install-deps.sh)")
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--remote-debugging-port=0",
             "--user-data-dir=" + self.tmp, "--window-size=%d,%d" % (width, height), "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.tmp, "DevToolsActivePort")
        deadline = time.time() + 20
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start")
            time.sleep(0.05)
        port = int(open(port_file).read().split("\n")[0])
        pages = []
        while not pages:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
                pages = [t for t in json.load(r) if t["type"] == "page"]
            if time.time() > deadline:
                raise RuntimeError("no page target")
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=20, suppress_origin=True)
        self.next_id = 0
        self.errors = []
        for m in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.call(m)
        self.viewport(width, height)

    def _event(self, msg):
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append("exception: %s %s" % (d.get("text"), d.get("exception", {}).get("description", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
            self.errors.append("console.error: %s" % " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.errors.append("log: %s (%s)" % (p["entry"]["text"], p["entry"].get("url", "")))

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self._event(msg)

    def viewport(self, width, height, mobile=False):
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=mobile)

    def eval(self, expr):
        """The value of a JS expression (awaited if a promise)."""
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("eval %r: %s" % (expr[:80], r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def wait(self, expr, secs=10):
        """Polls until expr is truthy; returns its value or None at the deadline."""
        deadline = time.time() + secs
        while time.time() < deadline:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.1)
        return None

    KEYS = {"Tab": 9, "Enter": 13, "Escape": 27}

    def key(self, name):
        """Presses one key (Tab, Enter, Escape) as a keyboard would."""
        code = self.KEYS[name]
        extra = {"text": "\r"} if name == "Enter" else {}
        self.call("Input.dispatchKeyEvent", type="keyDown", key=name, code=name, windowsVirtualKeyCode=code, **extra)
        self.call("Input.dispatchKeyEvent", type="keyUp", key=name, code=name, windowsVirtualKeyCode=code)

    def goto(self, url):
        self.call("Page.navigate", url=url)

    def screenshot(self, path):
        import base64
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            shutil.rmtree(self.tmp, ignore_errors=True)
