"""Minimal Kubernetes REST client for the property suite (stdlib only: urllib + ssl).

Independent of pkg/: it speaks JSON over HTTPS with the admin client certificate
of the throw-away control plane that test/e2e/lib.sh starts.
"""
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request


class ApiError(Exception):
    def __init__(self, code, method, path, body):
        super().__init__("%s %s -> %s: %s" % (method, path, code, body[:300]))
        self.code = code


class Client:
    def __init__(self, server, ca, cert, key, timeout=30):
        self.server = server.rstrip("/")
        self.timeout = timeout
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def _open(self, method, path, body=None, ctype="application/json", timeout=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", ctype)
        return urllib.request.urlopen(req, context=self.ctx,
                                      timeout=timeout or self.timeout)

    def req(self, method, path, body=None, ctype="application/json", ok404=False):
        try:
            with self._open(method, path, body, ctype) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            if ok404 and e.code == 404:
                return None
            raise ApiError(e.code, method, path, text) from None
        return json.loads(raw) if raw else None

    def get(self, path, ok404=False):
        return self.req("GET", path, ok404=ok404)

    def post(self, path, body):
        return self.req("POST", path, body)

    def put(self, path, body):
        return self.req("PUT", path, body)

    def merge_patch(self, path, body):
        return self.req("PATCH", path, body, ctype="application/merge-patch+json")

    def delete(self, path, body=None):
        return self.req("DELETE", path, body, ok404=True)

    def watch(self, path, resource_version, timeout_seconds=600):
        """Yields watch events (dicts) of a list path from resource_version on."""
        sep = "&" if "?" in path else "?"
        q = "%swatch=1&allowWatchBookmarks=false&resourceVersion=%s&timeoutSeconds=%d" % (
            sep, urllib.parse.quote(resource_version), timeout_seconds)
        r = self._open("GET", path + q, timeout=timeout_seconds + 30)
        try:
            for line in r:
                line = line.strip()
                if line:
                    yield json.loads(line)
        finally:
            r.close()


def client_from_env_args(args):
    return Client(args.server, args.ca, args.cert, args.key)
