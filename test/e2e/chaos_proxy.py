#!/usr/bin/env python3
"""chaos_proxy.py -- a fault-injecting HTTPS proxy between a client under test
and a kube-apiserver, for the chaos suite (test/e2e/t_chaos.sh).

It terminates TLS with a certificate of the test's CA, reads each request,
and either answers it with an injected failure or forwards it upstream over
TLS (verified against the same CA) with "Connection: close", streaming the
response back (watches included) and closing the client's connection after
it. Credentials pass through untouched and are never logged.

Faults come from a JSON control file, re-read every 0.2 s so a test can
change them mid-run (missing keys are "off"):

  {"latency_ms": 50,                       every request waits this long first
   "cut_per_s": 0.5,                       each open stream is cut with this
                                           probability per second (watches:
                                           "cut_watch_per_s" overrides)
   "fail_rate": 0.2, "fail_codes": [429, 500],
   "fail_match": "/binding$|/eviction$"}   POSTs whose path matches fail at
                                           fail_rate with one of fail_codes
                                           (429 carries Retry-After: 1)
   "refuse": true                          new connections are closed at once

Every request is logged to --log as "epoch_s method path status", with the
time it arrived (status
"cut" when the stream was cut, "inj-429" when injected), so the test can
count requests per second and faults.

    chaos_proxy.py --listen-port P --upstream https://127.0.0.1:6443 \\
        --cert proxy.crt --key proxy.key --ca ca.crt --control faults.json --log req.log
"""
import json
import random
import re
import socket
import ssl
import threading
import time
from urllib.parse import urlparse

import tlsproxy


class Faults:
    def __init__(self, path):
        self.path = path
        self.cfg = {}
        self.mu = threading.Lock()
        self.load()
        threading.Thread(target=self.reload_loop, daemon=True).start()

    def load(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                cfg = json.load(f)
        except (OSError, ValueError):
            return
        with self.mu:
            self.cfg = cfg

    def reload_loop(self):
        while True:
            time.sleep(0.2)
            self.load()

    def get(self, key, default=None):
        with self.mu:
            return self.cfg.get(key, default)


class Proxy:
    def __init__(self, a):
        self.up = urlparse(a.upstream)
        self.faults = Faults(a.control)
        self.srv_ctx = tlsproxy.server_context(a.cert, a.key)
        self.up_ctx = ssl.create_default_context(cafile=a.ca)
        self.log = tlsproxy.RequestLog(a.log)
        self.streams = {}  # id -> (client socket, upstream socket, is_watch)
        self.cut = set()  # ids of the streams the cutter shut down
        self.streams_mu = threading.Lock()
        self.rng = random.Random(a.seed)
        threading.Thread(target=self.cutter, daemon=True).start()

    def record(self, t0, method, path, status):
        self.log.record(t0, method, path, status)

    def cutter(self):
        while True:
            time.sleep(0.1)
            rate = float(self.faults.get("cut_per_s", 0) or 0)
            wrate = float(self.faults.get("cut_watch_per_s", rate) or 0)
            if rate <= 0 and wrate <= 0:
                continue
            with self.streams_mu:
                items = list(self.streams.items())
            for _, (c, u, watch) in items:
                if self.rng.random() < (wrate if watch else rate) * 0.1:
                    with self.streams_mu:
                        self.cut.add(id(u))
                    for s in (c, u):
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass

    def serve(self, port):
        tlsproxy.serve("chaos_proxy", port, self.up.geturl(), self.srv_ctx, self.one_request,
                       refuse=lambda: self.faults.get("refuse"))

    def one_request(self, c):
        """Handles one request; True when the client connection stays open."""
        req = tlsproxy.read_request(c)
        if req is None:
            return False
        t0 = time.time()
        lat = float(self.faults.get("latency_ms", 0) or 0)
        if lat > 0:
            time.sleep(lat / 1000.0)
        if req.method == "POST" and self.should_fail(req.target):
            code = self.rng.choice(self.faults.get("fail_codes") or [500])
            self.inject(c, code)
            self.record(t0, req.method, req.target, "inj-%d" % code)
            return True
        return self.forward(c, t0, req.method, req.target, req.headers, req.body)

    def should_fail(self, path):
        rate = float(self.faults.get("fail_rate", 0) or 0)
        pat = self.faults.get("fail_match")
        if rate <= 0 or not pat:
            return False
        return re.search(pat, path.split("?")[0]) is not None and self.rng.random() < rate

    @staticmethod
    def inject(c, code):
        extra = "Retry-After: 1\r\n" if code == 429 else ""
        tlsproxy.send_json(c, code, tlsproxy.status_body(code, "injected by chaos_proxy"), extra, close=False)

    def forward(self, c, t0, method, path, headers, body):
        try:
            u = tlsproxy.connect_upstream(self.up, self.up_ctx)
        except (OSError, ssl.SSLError):
            self.inject(c, 503)
            self.record(t0, method, path, "upstream-down")
            return True
        watch = "watch=" in path
        sid = id(u)
        with self.streams_mu:
            self.streams[sid] = (c, u, watch)
        status = "?"
        try:
            u.sendall(tlsproxy.request_bytes(method, path, headers, body))
            status = tlsproxy.pump(u, c)
        except (OSError, ssl.SSLError):
            status = "cut"
        finally:
            with self.streams_mu:
                self.streams.pop(sid, None)
                if sid in self.cut:
                    self.cut.discard(sid)
                    status = "cut"
            try:
                u.close()
            except OSError:
                pass
        self.record(t0, method, path, status)
        return False  # upstream closed: close the client's connection too


def main():
    ap = tlsproxy.arg_parser(__doc__)
    ap.add_argument("--control", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    Proxy(a).serve(a.listen_port)


if __name__ == "__main__":
    main()
