"""Helpers of the storage tests (fixtures are in conftest.py): the contract every Storage backend
keeps (test_storage.py runs it on memory, local disk and pyarrow.fs; test_s3.py on the S3 server),
each check taking the storage and a root; and an HTTP proxy that makes S3's DeleteObjects fail
the way S3 does under load."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from timeline.exceptions import FileExists, FileNotFound
from timeline.storage import Storage


def write_read_list_and_status(store: tuple[Storage, str]) -> None:
    storage, root = store
    storage.write(f"{root}/a/one.parquet", b"12345")
    storage.write(f"{root}/a/b/two.log", b"xy")
    storage.makedirs(f"{root}/a/empty")
    assert storage.read(f"{root}/a/one.parquet") == b"12345"
    listing = {s.name: (s.size, s.is_dir) for s in storage.list(f"{root}/a")}
    assert listing == {"one.parquet": (5, False), "b": (0, True), "empty": (0, True)}
    assert sorted((s.name, s.size) for s in storage.list_recursive(root)) == [("one.parquet", 5), ("two.log", 2)]
    status = storage.status(f"{root}/a/one.parquet")
    assert status.size == 5 and not status.is_dir and status.mtime_ms > 0
    assert storage.exists(f"{root}/a/b") and not storage.exists(f"{root}/nope")


def write_is_create_if_absent(store: tuple[Storage, str]) -> None:
    storage, root = store
    storage.write(f"{root}/x", b"first")
    with pytest.raises(FileExists) as raised:
        storage.write(f"{root}/x", b"second")
    assert f"{root}/x" in str(raised.value)
    assert storage.read(f"{root}/x") == b"first"
    storage.write(f"{root}/x", b"third", overwrite=True)
    assert storage.read(f"{root}/x") == b"third"


def delete_says_whether_the_file_was_there(store: tuple[Storage, str]) -> None:
    storage, root = store
    storage.write(f"{root}/d/f", b"1")
    assert storage.delete(f"{root}/d/f") is True
    assert storage.delete(f"{root}/d/f") is False
    storage.write(f"{root}/p/q/r", b"1")
    assert storage.delete_dir(f"{root}/p") is True
    assert not storage.exists(f"{root}/p/q/r")
    assert storage.delete_dir(f"{root}/p") is False


def missing_paths_raise_file_not_found_naming_the_path(store: tuple[Storage, str]) -> None:
    storage, root = store
    for call in (lambda: storage.read(f"{root}/missing"), lambda: storage.list(f"{root}/missing"),
                 lambda: list(storage.list_recursive(f"{root}/missing")), lambda: storage.status(f"{root}/missing")):
        with pytest.raises(FileNotFound) as raised:
            call()
        assert f"{root}/missing" in str(raised.value)


STORAGE_CONTRACT = (write_read_list_and_status, write_is_create_if_absent, delete_says_whether_the_file_was_there,
                    missing_paths_raise_file_not_found_naming_the_path)


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
