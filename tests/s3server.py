"""A real S3-compatible server on loopback (moto's threaded server) and tools to break it.

All moto servers of one process share their backend state: a bucket created through one
endpoint is visible through every other. Tests use that to give a dedicated server to the
test that kills it while the shared one keeps serving.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto.server import ThreadedMotoServer

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
AWS_UNSET = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")


class MotoS3:
    """moto's ThreadedMotoServer on 127.0.0.1 and a free port."""

    def __init__(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no per-request lines
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        assert host == "127.0.0.1"
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        """Stop serving and close the listening socket: new connections are refused."""
        self._server.stop()
        inner = getattr(self._server, "_server", None)
        if inner is not None:
            inner.server_close()


def client(endpoint: str, service: str = "s3", **kwargs: Any) -> Any:
    config = Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=5, read_timeout=10)
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1", config=config, **kwargs)


def set_auth(endpoint: str, enabled: bool) -> None:
    """Turn moto's IAM authentication on (every request checked) or off (the default)."""
    request = urllib.request.Request(
        f"{endpoint}/moto-api/reset-auth",
        data=b"0" if enabled else b"inf",
        headers={"Content-Type": "text/plain"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        assert json.loads(r.read())["status"] == "ok"


def create_user_key(endpoint: str, user: str) -> tuple[str, str]:
    """An IAM user allowed s3:* and iam:* with a fresh access key (call while auth is off)."""
    iam = client(endpoint, "iam")
    iam.create_user(UserName=user)
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:*", "iam:*"], "Resource": "*"}],
    }
    iam.put_user_policy(UserName=user, PolicyName="indexer", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def error_response(status: int, code: str, message: str) -> AWSResponse:
    body = f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
    return AWSResponse("http://127.0.0.1/", status, {"Content-Type": "application/xml"}, _Raw(body.encode()))


def on_call(n: int, action: Callable[[], Any], repeat: bool = False) -> Callable[..., Any]:
    """A botocore event handler that runs ``action`` on its ``n``-th call (1-based; with
    ``repeat`` on every later call too) and returns its result (a before-send handler that
    returns a response replaces the HTTP exchange)."""
    calls = 0

    def handler(**_: Any) -> Any:
        nonlocal calls
        calls += 1
        return action() if calls == n or (repeat and calls > n) else None

    return handler


def close_connections(request: Any, **_: Any) -> None:
    """before-send: ask the server to close each connection, so none outlives a killed server."""
    request.headers["Connection"] = "close"


# ----------------------------------------------------------------------------- a throttling proxy

SLOW_DOWN = (
    b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
    b"<Message>Please reduce your request rate.</Message></Error>"
)
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"}
CONDITIONAL = ("if-none-match", "if-match")


class ThrottlingProxy:
    """A real HTTP proxy on 127.0.0.1 in front of an S3 endpoint, for the store-side faults.

    Each request is forwarded to ``upstream`` after ``latency`` seconds, except that every
    ``slowdown_every``-th request (0: none) is answered ``503 SlowDown`` without reaching it, and
    every request while ``blackout`` is set, and every request whose ``"METHOD /path"`` matches
    the regular expression ``throttle`` (e.g. ``"^PUT .*/_versions/"``: every commit).
    ``strip_conditional`` removes ``If-None-Match`` and ``If-Match`` before forwarding: a store
    that ignores conditional PUTs.
    The proxy is bounded: it answers 503 once it has seen ``max_requests`` requests, and stops
    serving after ``lifetime`` seconds. ``log`` records ``(method, path, conditional headers, status)``.
    """

    def __init__(
        self,
        upstream: str,
        latency: float = 0.0,
        slowdown_every: int = 0,
        strip_conditional: bool = False,
        max_requests: int = 200_000,
        lifetime: float = 600.0,
    ) -> None:
        import http.client
        import re
        import threading
        import time
        import urllib.parse
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        target = urllib.parse.urlsplit(upstream)
        self.latency = latency
        self.slowdown_every = slowdown_every
        self.strip_conditional = strip_conditional
        self.blackout = False
        self.throttle: str | None = None
        self.max_requests = max_requests
        self.requests = 0
        self.throttled = 0
        self.stripped = 0
        self.log: list[tuple[str, str, dict[str, str], int]] = []
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:  # no per-request lines on stderr
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in _HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                length = dict((k.lower(), v) for k, v in headers).get("content-length", "0")
                self.send_header("Content-Length", length if self.command == "HEAD" else str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _handle(self) -> None:
                body = self._body()
                conditional = {k.lower(): v for k, v in self.headers.items() if k.lower() in CONDITIONAL}
                with lock:
                    proxy.requests += 1
                    n = proxy.requests
                    throttle = bool(
                        proxy.blackout
                        or n > proxy.max_requests
                        or (
                            proxy.throttle is not None
                            and re.search(proxy.throttle, f"{self.command} {self.path}")
                        )
                        or (proxy.slowdown_every > 0 and n % proxy.slowdown_every == 0)
                    )
                    proxy.throttled += throttle
                if proxy.latency:
                    time.sleep(proxy.latency)
                if throttle:
                    status, headers, data = 503, [("Content-Type", "application/xml")], SLOW_DOWN
                else:
                    headers_out = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                    if proxy.strip_conditional and conditional:
                        headers_out = {k: v for k, v in headers_out.items() if k.lower() not in CONDITIONAL}
                        with lock:
                            proxy.stripped += 1
                    headers_out["Content-Length"] = str(len(body))
                    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                    try:
                        conn.request(self.command, self.path, body=body, headers=headers_out)
                        resp = conn.getresponse()
                        status, headers, data = resp.status, resp.getheaders(), resp.read()
                    finally:
                        conn.close()
                with lock:
                    proxy.log.append((self.command, self.path, conditional, status))
                self._answer(status, headers, data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()

    def puts_with(self, header: str) -> list[str]:
        """Paths of the PUT requests that carried ``header`` (lower case), as the client sent them."""
        return [path for method, path, cond, _ in self.log if method == "PUT" and header in cond]

    def stop(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ThrottlingProxy:
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop()
