"""A real S3-protocol server for tests and benchmarks: `moto_server` (moto[server]) on
127.0.0.1, in its own process, on a free port.

`S3Server.start()` waits until it answers; `env` holds the variables that point the library,
boto3, hudi-rs and any subprocess at it (`AWS_ENDPOINT_URL`, test credentials, region).
`command(port)` is the server's command line: bench/s3.py overrides it to serve moto's
application with a seeding route of its own, and so shares the start-up, the environment and
the shutdown (this module needs no pytest).
`upload(folder, bucket)` copies a local table into a fresh bucket and returns its `s3://` URI.
`recording()` counts what the server received (moto's own request recorder), so a test can
assert how many requests an operation took without wrapping the client it tests.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa

REGION = "us-east-1"
# Credentials the server accepts (moto checks none); never real ones.
ACCESS_KEY = "cleanline-test-key"
SECRET_KEY = "cleanline-test-secret"

# Outside an S3 test nothing may reach a cloud endpoint: the endpoint points at a closed local
# port, the instance-metadata lookup is off and no profile or credentials file is read.
OFFLINE_ENV = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
CLEARED_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3",
               "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
               "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


def offline_aws_environment() -> None:
    """Point every AWS client of this process (and its subprocesses) away from the cloud."""
    for name in CLEARED_ENV:
        os.environ.pop(name, None)
    os.environ.update(OFFLINE_ENV)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[Any] | None) -> None:
    """Stop a test server's process: terminate, then kill after 10 s."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def moto_server_command() -> str:
    found = Path(sys.executable).with_name("moto_server")
    if found.exists():
        return str(found)
    which = shutil.which("moto_server")
    if which is None:
        raise RuntimeError("moto_server not found: install the test extra (pip install -e '.[test]')")
    return which


@dataclass
class S3Server:
    """One `moto_server` process on 127.0.0.1."""

    workdir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    _client: Any = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """What points AWS clients at this server."""
        return {**OFFLINE_ENV, "AWS_ENDPOINT_URL": self.endpoint}

    @property
    def hudi_options(self) -> dict[str, str]:
        """The same for hudi-rs (object_store's option names)."""
        return {"aws_endpoint_url": self.endpoint, "aws_allow_http": "true", "aws_access_key_id": ACCESS_KEY,
                "aws_secret_access_key": SECRET_KEY, "aws_region": REGION}

    def command(self, port: int) -> list[str]:
        """The server's command line, listening on 127.0.0.1:`port`."""
        return [moto_server_command(), "-H", "127.0.0.1", "-p", str(port)]

    def start(self, *, attempts: int = 5) -> S3Server:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.workdir / "moto_server.log", "ab")  # noqa: SIM115 - closed with the process
        for _ in range(attempts):
            self.port = free_port()
            env = {**os.environ, "MOTO_RECORDER_FILEPATH": str(self.workdir / "requests.jsonl")}
            self.process = subprocess.Popen(self.command(self.port), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            cwd=self.workdir)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):
                        log.close()
                        return self
                except OSError:
                    time.sleep(0.1)
            self.stop()  # the port was taken between the probe and the bind, or it hung: again
        log.close()
        raise RuntimeError(f"the S3 server did not start; see {self.workdir / 'moto_server.log'}")

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None

    def client(self) -> Any:
        """A boto3 S3 client for test set-up (never the client under test)."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                        config=Config(max_pool_connections=32))
        return self._client

    def new_bucket(self, prefix: str = "lake") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def upload(self, folder: Path, bucket: str | None = None, *, key_prefix: str | None = None) -> str:
        """Copy every file below `folder` to `s3://bucket/<key_prefix or folder name>/...`
        (a fresh bucket unless given) and return that URI."""
        bucket = bucket or self.new_bucket()
        prefix = key_prefix if key_prefix is not None else folder.name
        files = [p for p in folder.rglob("*") if p.is_file()]
        client = self.client()

        def put(path: Path) -> None:
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}",
                              Body=path.read_bytes())

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, files))
        return f"s3://{bucket}/{prefix}"

    def keys(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Key -> size of every object under a prefix."""
        found: dict[str, int] = {}
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found.update({o["Key"]: o["Size"] for o in page.get("Contents", ())})
        return found

    def put_many(self, bucket: str, keys: list[str], body: bytes = b"x", *, threads: int = 32) -> None:
        client = self.client()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=body), keys))

    def _moto_api(self, path: str, *, post: bool = False) -> bytes:
        request = urllib.request.Request(f"{self.endpoint}/moto-api/{path}", method="POST" if post else "GET",
                                         data=b"" if post else None)
        with urllib.request.urlopen(request, timeout=30) as response:
            return bytes(response.read())

    @contextmanager
    def recording(self) -> Iterator[list[dict[str, Any]]]:
        """The requests the server receives inside the block (moto's recorder), each as
        {"method", "url", "body"} with the body decoded, filled in when the block ends."""
        requests: list[dict[str, Any]] = []
        self._moto_api("recorder/reset-recording", post=True)
        self._moto_api("recorder/start-recording", post=True)
        try:
            yield requests
        finally:
            self._moto_api("recorder/stop-recording", post=True)
            # moto's recorder appends each request and its newline in two writes from the
            # server's threads: requests answered at once can share a line
            text, decoder, pos = self._moto_api("recorder/download-recording").decode(), json.JSONDecoder(), 0
            while True:
                while pos < len(text) and text[pos].isspace():
                    pos += 1
                if pos == len(text):
                    break
                entry, pos = decoder.raw_decode(text, pos)
                body = entry.get("body") or ""
                entry["body"] = base64.b64decode(body) if entry.get("body_encoded") else body.encode()
                requests.append(entry)


class FaultyProxy:
    """An HTTP proxy on 127.0.0.1 in front of an S3 server that makes DeleteObjects fail the
    way S3 does under load: the first `throttle` requests are answered `503 SlowDown` (not
    forwarded), and in the next `slow_keys` answers the first key is reported as a per-key
    `SlowDown` error (forwarded, so the key is in fact gone, as when S3 loses an answer).
    `deletes` counts the DeleteObjects requests that reached the proxy."""

    def __init__(self, target: str, *, throttle: int = 0, slow_keys: int = 0) -> None:
        import http.server
        import threading

        self.target = urllib.parse.urlparse(target)
        self.throttle, self.slow_keys, self.deletes = throttle, slow_keys, 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                is_delete = self.command == "POST" and "?delete" in self.path
                with proxy.lock:
                    proxy.deletes += is_delete
                    throttled = is_delete and proxy.throttle > 0
                    proxy.throttle -= throttled
                    slow = is_delete and not throttled and proxy.slow_keys > 0
                    proxy.slow_keys -= slow
                if throttled:
                    self.answer(503, {"Content-Type": "application/xml"},
                                b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
                                b"<Message>Please reduce your request rate.</Message></Error>")
                    return
                import http.client

                upstream = http.client.HTTPConnection(proxy.target.hostname, proxy.target.port, timeout=60)
                upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                response = upstream.getresponse()
                data = response.read()
                headers = {k: v for k, v in response.getheaders()
                           if k.lower() not in ("content-length", "transfer-encoding", "connection")}
                upstream.close()
                if slow:
                    key = body.split(b"<Key>", 1)[1].split(b"</Key>", 1)[0]
                    error = (b"<Error><Key>" + key + b"</Key><Code>SlowDown</Code>"
                             b"<Message>Please reduce your request rate.</Message></Error>")
                    data = data.replace(b"</DeleteResult>", error + b"</DeleteResult>")
                self.answer(response.status, headers, data)

            def answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FaultyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class ChaosProxy:
    """A fault-injecting HTTP proxy on 127.0.0.1 in front of an S3 server: S3 at its limits.

    A seeded fraction `rate` of the requests it receives (every kind: listings, GETs, HEADs,
    PUTs, DeleteObjects) gets a fault, each of `kinds` in turn:
    - "slowdown": answered `503 SlowDown` (not forwarded);
    - "internal": answered `500 InternalError` (not forwarded);
    - "reset": the connection reset (RST) without an answer (not forwarded);
    - "lost": forwarded and done by the server, then the connection closed without the answer
      (S3 did it, the client does not know).
    In DeleteObjects requests that are forwarded, a seeded fraction `key_rate` of the keys (and
    every key containing one of `stuck`, every time) is taken out of the request forwarded and
    answered as a per-key error (`SlowDown` or `InternalError`), so those keys stay on the server.
    `faults` counts the faults given by kind ("key" for per-key errors), `requests` the requests
    received. Forwarding keeps one upstream connection per client connection."""

    KINDS = ("slowdown", "internal", "reset", "lost")

    def __init__(self, target: str, *, rate: float = 0.1, key_rate: float = 0.0, seed: int = 0,
                 kinds: tuple[str, ...] = KINDS, stuck: tuple[str, ...] = ()) -> None:
        import http.client
        import http.server
        import random
        import struct
        import threading
        import zlib
        from collections import Counter

        self.target = urllib.parse.urlparse(target)
        self.rate, self.key_rate, self.kinds, self.stuck = rate, key_rate, kinds, stuck
        self.random = random.Random(seed)
        self.faults: Counter[str] = Counter()
        self.requests = 0
        self.lock = threading.Lock()
        proxy = self

        def crc32(data: bytes) -> str:
            return base64.b64encode(struct.pack(">I", zlib.crc32(data))).decode()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            upstream: http.client.HTTPConnection | None = None

            def log_message(self, *args: Any) -> None:
                pass

            def fault(self) -> str | None:
                with proxy.lock:
                    proxy.requests += 1
                    if proxy.random.random() >= proxy.rate:
                        return None
                    kind = proxy.kinds[sum(proxy.faults[k] for k in proxy.kinds) % len(proxy.kinds)]
                    proxy.faults[kind] += 1
                    return kind

            def failing_keys(self, keys: list[bytes]) -> set[bytes]:
                with proxy.lock:
                    chosen = {k for k in keys if proxy.random.random() < proxy.key_rate
                              or any(s.encode() in k for s in proxy.stuck)}
                    proxy.faults["key"] += len(chosen)
                    return chosen

            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                kind = self.fault()
                if kind == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()  # an RST, no FIN first
                    self.close_connection = True
                    return
                if kind in ("slowdown", "internal"):
                    code, status = ("SlowDown", 503) if kind == "slowdown" else ("InternalError", 500)
                    self.answer(status, {"Content-Type": "application/xml"},
                                f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                                f"<Message>injected {code}</Message></Error>".encode())
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                errors = b""
                if self.command == "POST" and "?delete" in self.path:  # no fault, or "lost"
                    objects = re.findall(rb"<Object>.*?</Object>", body, re.S)
                    keys = [re.search(rb"<Key>(.*?)</Key>", o, re.S).group(1) for o in objects]  # type: ignore[union-attr]
                    failing = self.failing_keys(keys)
                    if failing:
                        with proxy.lock:
                            codes = {k: proxy.random.choice((b"SlowDown", b"InternalError")) for k in failing}
                        errors = b"".join(b"<Error><Key>" + k + b"</Key><Code>" + codes[k] + b"</Code>"
                                          b"<Message>injected " + codes[k] + b"</Message></Error>"
                                          for k in sorted(failing))
                        kept = [o for o, k in zip(objects, keys) if k not in failing]
                        if not kept:
                            if kind == "lost":
                                self.close_connection = True
                                return
                            self.answer(200, {"Content-Type": "application/xml"},
                                        b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns='
                                        b'"http://s3.amazonaws.com/doc/2006-03-01/">' + errors + b"</DeleteResult>")
                            return
                        body = re.sub(rb"<Object>.*</Object>", b"".join(kept).replace(b"\\", b"\\\\"), body,
                                      count=1, flags=re.S)
                        headers = {k: v for k, v in headers.items()
                                   if k.lower() not in ("content-md5", "content-length")
                                   and not k.lower().startswith("x-amz-checksum-")}
                        headers["x-amz-checksum-crc32"] = crc32(body)
                        headers["Content-Length"] = str(len(body))
                status, response_headers, data = self.upstream_call(body, headers)
                if kind == "lost":
                    self.close_connection = True
                    return
                if errors:
                    if b"</DeleteResult>" in data:
                        data = data.replace(b"</DeleteResult>", errors + b"</DeleteResult>")
                    else:  # <DeleteResult .../>
                        data = re.sub(rb"<DeleteResult([^>]*)/>", rb"<DeleteResult\1>" + errors.replace(b"\\", b"\\\\")
                                      + b"</DeleteResult>", data)
                self.answer(status, response_headers, data)

            def upstream_call(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
                for attempt in range(2):  # a kept-alive upstream connection may have been closed
                    if self.upstream is None:
                        self.upstream = http.client.HTTPConnection(proxy.target.hostname, proxy.target.port,
                                                                   timeout=120)
                    try:
                        self.upstream.request(self.command, self.path, body=body, headers=headers)
                        response = self.upstream.getresponse()
                        data = response.read()
                    except (http.client.HTTPException, OSError):
                        self.upstream.close()
                        self.upstream = None
                        if attempt:
                            raise
                        continue
                    dropped = ("transfer-encoding", "connection") if self.command == "HEAD" else (
                        "content-length", "transfer-encoding", "connection")
                    kept = {k: v for k, v in response.getheaders() if k.lower() not in dropped}
                    return response.status, kept, data
                raise AssertionError("unreachable")

            def answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if not any(name.lower() == "content-length" for name in headers):
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def finish(self) -> None:
                super().finish()
                if self.upstream is not None:
                    self.upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ChaosProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


V9_MOR = "sample_table/mor/avro/v9_txns_simple_nometa"         # logs, compaction, clustering


def split(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix


def rows(server: S3Server, uri: str, as_of: str | None = None) -> list[tuple[Any, ...]]:
    """Every row hudi-rs reads from the S3 table (all columns but the file name), sorted."""
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = hudi.HudiTable(uri, server.hudi_options).read(options)
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    columns = [c for c in table.column_names if c != "_hoodie_file_name"]
    return sorted(map(tuple, (list(r.values()) for r in table.select(columns).to_pylist())), key=repr)


def data_keys(server: S3Server, uri: str) -> set[str]:
    """Table-relative keys of every object outside `.hoodie/`."""
    bucket, prefix = split(uri)
    return {k[len(prefix) + 1:] for k in server.keys(bucket, prefix + "/") if "/.hoodie/" not in f"/{k}"}


def signers(requests: list[dict[str, Any]]) -> set[str]:
    """The access key ids recorded requests were signed with ("unsigned" for none)."""
    found = (re.search(r"Credential=([^/]+)/", r["headers"].get("Authorization", "")) for r in requests)
    return {m.group(1) if m else "unsigned" for m in found}
