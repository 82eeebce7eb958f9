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
