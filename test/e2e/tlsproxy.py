"""tlsproxy.py -- what the e2e suite's HTTPS proxies share (chaos_proxy.py,
standin_apiserver.py): the TLS accept loop, reading one HTTP/1.1 request,
a Kubernetes Status answer, the upstream connection and the request log.

Each proxy ends TLS with a certificate of the test's CA and opens one
upstream connection per request (verified against the same CA), so a
response ends with its connection. Credentials pass through untouched and
are never logged.
"""
import argparse
import json
import re
import socket
import ssl
import sys
import threading

MAX_HEAD = 64 * 1024
# Headers a proxy sets itself on each upstream request.
HOP_HEADERS = ("connection", "keep-alive", "proxy-connection", "expect")

REASONS = {400: "BadRequest", 409: "Conflict", 422: "Invalid", 429: "TooManyRequests",
           500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable"}


def arg_parser(doc):
    """The options every proxy takes: where it listens, its upstream, the
    TLS files and the request log."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen-port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--log", required=True)
    return ap


class Request:
    """One client request: method, target (path with query), path (without
    query), headers as a list of "Name: value" lines, and the body."""

    def __init__(self, method, target, headers, body):
        self.method = method
        self.target = target
        self.path = target.split("?")[0]
        self.headers = headers
        self.body = body

    def header(self, name):
        name = name.lower()
        for h in self.headers:
            k, _, v = h.partition(":")
            if k.strip().lower() == name:
                return v.strip()
        return ""


class RequestLog:
    """Lines "epoch_s method path status", with the time the request arrived
    and the path only: a query may carry a label selector, never a credential."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1, encoding="utf-8")
        self.mu = threading.Lock()

    def record(self, t0, method, path, status):
        with self.mu:
            self.f.write("%.3f %s %s %s\n" % (t0, method, path.split("?")[0], status))


def server_context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


def serve(name, port, upstream, srv_ctx, handle_one, refuse=None):
    """Accepts on 127.0.0.1:port; each TLS connection runs handle_one(sock)
    until it returns False. refuse() true: new connections are closed at once."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(512)
    print("%s: listening on 127.0.0.1:%d -> %s" % (name, port, upstream), file=sys.stderr, flush=True)
    while True:
        conn, _ = ls.accept()
        if refuse is not None and refuse():
            conn.close()
            continue
        threading.Thread(target=_handle, args=(srv_ctx, conn, handle_one), daemon=True).start()


def _handle(srv_ctx, raw, handle_one):
    try:
        c = srv_ctx.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError):
        raw.close()
        return
    try:
        while handle_one(c):
            pass
    except (OSError, ssl.SSLError, ValueError):
        pass
    finally:
        try:
            c.close()
        except OSError:
            pass


def _read_head(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = c.recv(4096)
        if not chunk:
            return None, b""
        buf += chunk
        if len(buf) > MAX_HEAD:
            raise ValueError("request head too large")
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def read_request(c):
    """The next request on c (None when the client closed). Hop-by-hop
    headers are left out; "Expect: 100-continue" is answered here, so that
    curl sends its body at once."""
    head, rest = _read_head(c)
    if head is None:
        return None
    lines = head.split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = []
    length = 0
    expect = False
    for h in lines[1:]:
        k, _, v = h.partition(":")
        k = k.strip().lower()
        if k == "content-length":
            length = int(v.strip())
        if k == "expect" and v.strip().lower() == "100-continue":
            expect = True
        if k in HOP_HEADERS:
            continue
        headers.append(h)
    if expect and len(rest) < length:
        c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    body = rest
    while len(body) < length:
        chunk = c.recv(min(65536, length - len(body)))
        if not chunk:
            return None
        body += chunk
    return Request(method, target, headers, body)


def status_body(code, message, details=None):
    """A metav1.Status of a failure, as kube-apiserver writes one."""
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
          "message": message, "reason": REASONS.get(code, "InternalError")}
    if details is not None:
        st["details"] = details
    st["code"] = code
    return json.dumps(st).encode()


def send_json(c, code, body, extra="", close=True):
    """One complete response (close: and "Connection: close", the caller
    then closes the connection)."""
    extra += "Connection: close\r\n" if close else ""
    c.sendall(("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
               % (code, REASONS.get(code, "OK"), len(body), extra)).encode() + body)


def connect_upstream(up, ctx):
    host = up.hostname
    u = ctx.wrap_socket(socket.create_connection((host, up.port or 443), timeout=10), server_hostname=host)
    u.settimeout(None)
    return u


def pump(u, c):
    """Copies the upstream's answer on u to the client c as it comes, until
    the upstream closes; returns its status code ("?" when there is none)."""
    status = "?"
    first = True
    while True:
        chunk = u.recv(65536)
        if not chunk:
            return status
        if first:
            m = re.match(rb"HTTP/1\.[01] (\d+)", chunk)
            status = m.group(1).decode() if m else "?"
            first = False
        c.sendall(chunk)


def request_bytes(method, target, headers, body):
    """An upstream request of one use: "Connection: close"."""
    return ("%s %s HTTP/1.1\r\n%s\r\nConnection: close\r\n\r\n"
            % (method, target, "\r\n".join(headers))).encode("latin-1") + body
