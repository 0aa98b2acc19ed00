"""The language-server benchmarks' client (bench_lsp.py, bench_lsp_reliability.py): `ttap lsp`
over stdio, Content-Length framing, a reader thread that keeps every message with its arrival
time and answers the server's own requests (registerCapability, configuration) with null."""
import json, os, subprocess, threading, time


def frame(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Client:
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.lock = threading.Lock()
        self.messages = []
        self.cv = threading.Condition()
        self.next_id = 1
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        f = self.p.stdout
        while True:
            headers = {}
            while True:
                line = f.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                k, v = line.split(b":", 1)
                headers[k.strip().lower()] = v.strip()
            body = f.read(int(headers[b"content-length"]))
            msg = json.loads(body)
            if "id" in msg and "method" in msg:  # a request from the server: answer it
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            with self.cv:
                self.messages.append((time.perf_counter(), msg))
                self.cv.notify_all()

    def send(self, msg):
        with self.lock:
            self.p.stdin.write(frame(msg))
            self.p.stdin.flush()

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        with self.lock:
            i = self.next_id
            self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return i

    def wait(self, pred, timeout=300):
        deadline = time.perf_counter() + timeout
        with self.cv:
            while True:
                for k, (t, m) in enumerate(self.messages):
                    if pred(m):
                        del self.messages[k]
                        return t, m
                left = deadline - time.perf_counter()
                if left <= 0:
                    return None, None
                self.cv.wait(left)

    def reply_to(self, i, timeout=300):
        return self.wait(lambda m: m.get("id") == i and "method" not in m, timeout)

    def call(self, method, params, timeout=300):
        t0 = time.perf_counter()
        t, m = self.reply_to(self.request(method, params), timeout)
        return ((t - t0) * 1000 if t else float("inf")), m

    def start(self, ws, watchers=False, extra=None):
        caps = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}} if watchers else {}
        self.call("initialize", {"processId": os.getpid(), "rootUri": f"file://{ws}",
                                 "capabilities": caps,
                                 "initializationOptions": dict({"model": {"enabled": False}}, **(extra or {}))})
        self.notify("initialized", {})

    def stop(self):
        try:
            self.call("shutdown", None, 30)
            self.notify("exit", None)
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()

    def status(self, state, timeout=600):
        return self.wait(lambda m: m.get("method") == "ttap/status" and m["params"]["state"] == state, timeout)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
