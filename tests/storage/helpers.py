"""Helpers of the storage tests (fixtures are in conftest.py): the contract every Storage backend
keeps (test_storage.py runs it on memory, local disk and pyarrow.fs; test_s3.py on the S3 server),
each check taking the storage and a root; and an HTTP proxy that makes S3's DeleteObjects fail
the way S3 does under load."""

from __future__ import annotations

import base64
import http.client
import http.server
import random
import re
import shutil
import socket
import struct
import threading
import time
import urllib.parse
import zlib
from pathlib import Path
from typing import Any

import pytest

from timeline.exceptions import FileExists, FileNotFound
from timeline.storage import Storage
from timeline.storage.base import is_side_file


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


def side_files_are_never_listed(store: tuple[Storage, str]) -> None:
    """Hadoop's checksum files (`.<name>.crc`) and macOS's `.DS_Store` are in no listing (a
    `.crc` of a log file looks like a log file); they are there all the same, and a folder deleted
    goes with them. A name ending in `.crc` without the leading dot is no checksum file."""
    storage, root = store
    for name in ("a_0-1-1_001.parquet", ".a_001.log.1_0-1-1"):
        storage.write(f"{root}/p/{name}", b"x")
        storage.write(f"{root}/p/.{name}.crc", b"crc\0")
    storage.write(f"{root}/p/.DS_Store", b"d")
    storage.write(f"{root}/p/sub/.DS_Store", b"d")
    storage.write(f"{root}/p/notes.crc", b"n")
    files = {"a_0-1-1_001.parquet", ".a_001.log.1_0-1-1", "notes.crc"}
    assert {s.name for s in storage.list(f"{root}/p")} == files | {"sub"}
    assert {s.name for s in storage.list_unsized(f"{root}/p")} == files | {"sub"}
    assert set(storage.list_names(f"{root}/p")) == files | {"sub"}
    assert {s.name for s in storage.list_recursive(f"{root}/p")} == files
    walked = dict(storage.walk(f"{root}/p", lambda folder, entries: [e.path for e in entries if e.is_dir]))
    assert {s.name for entries in walked.values() for s in entries} == files | {"sub"}
    assert storage.exists(f"{root}/p/.DS_Store") and storage.read(f"{root}/p/..a_001.log.1_0-1-1.crc") == b"crc\0"
    assert storage.delete_dir(f"{root}/p") and not storage.exists(f"{root}/p/.DS_Store")


def hadoop_checksum(data: bytes) -> bytes:
    """A `.<name>.crc` file's content for `data`, in ChecksumFileSystem's format: "crc\\0", the
    bytes per checksum (512), a CRC-32 per chunk."""
    sums = b"".join(struct.pack(">I", zlib.crc32(data[i:i + 512])) for i in range(0, len(data), 512))
    return b"crc\0" + struct.pack(">i", 512) + sums


def checksum_problems(base: Path) -> list[str]:
    """The checksum files below `base` whose file is gone, or that no longer match their file
    (a Hadoop reader fails on those: ChecksumException)."""
    problems = []
    for checksum in base.rglob(".*.crc"):
        checked = checksum.with_name(checksum.name[1:-4])
        if not checked.exists():
            problems.append(f"{checksum}: its file is gone")
        elif checksum.read_bytes() != hadoop_checksum(checked.read_bytes()):
            problems.append(f"{checksum}: stale")
    return sorted(problems)


def add_side_files(base: Path) -> int:
    """What Hadoop's local file system and macOS leave in a table: a checksum file beside every
    file (`.<name>.crc`, ChecksumFileSystem's format: "crc\\0", the bytes per checksum, a CRC-32
    per chunk) and a `.DS_Store` in every folder. Returns how many were written."""
    written = 0
    for folder in [base, *(p for p in base.rglob("*") if p.is_dir())]:
        for item in list(folder.iterdir()):
            if item.is_file():
                (folder / f".{item.name}.crc").write_bytes(hadoop_checksum(item.read_bytes()))
                written += 1
        (folder / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
        written += 1
    return written


def remove_side_files(base: Path) -> None:
    """A table as Hudi's listings see it: every side file gone (some fixtures ship a `.DS_Store`)."""
    for item in [p for p in base.rglob("*") if p.is_file() and is_side_file(p.name)]:
        item.unlink()


STORAGE_CONTRACT = (write_read_list_and_status, write_is_create_if_absent, delete_says_whether_the_file_was_there,
                    missing_paths_raise_file_not_found_naming_the_path, side_files_are_never_listed)


class FaultyProxy:
    """An HTTP proxy on 127.0.0.1 in front of an S3 server that makes DeleteObjects fail the
    way S3 does under load: the first `throttle` requests are answered `503 SlowDown` (not
    forwarded), and in the next `slow_keys` answers the first key is reported as a per-key
    `SlowDown` error (forwarded, so the key is in fact gone, as when S3 loses an answer).
    `deletes` counts the DeleteObjects requests that reached the proxy."""

    def __init__(self, target: str, *, throttle: int = 0, slow_keys: int = 0) -> None:
        import http.server

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
        import threading
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


# A table's folder swapped during a run (timeline/storage/anchor.py)

def tree_state(path: Path) -> dict[str, tuple[int, int]]:
    """Every file below `path`: relative path -> (size, modification time), symbolic links as they are."""
    return {str(p.relative_to(path)): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in path.rglob("*") if not p.is_dir() or p.is_symlink()}


def swap_for_link(folder: Path, copy: Path) -> Path:
    """What the attack does: rename the table's folder aside and put a symbolic link to `copy` (a
    copy made beforehand, outside the allowed roots) in its place. Returns where the folder went."""
    moved = folder.with_name(folder.name + ".moved")
    folder.rename(moved)
    folder.symlink_to(copy, target_is_directory=True)
    return moved


def swap_back(folder: Path, moved: Path) -> None:
    """The operator puts the table's folder back."""
    folder.unlink()
    moved.rename(folder)


def copied_aside(folder: Path, copy: Path) -> dict[str, tuple[int, int]]:
    """The attacker's copy of the table's folder, made beforehand outside the allowed roots; its
    state, which nothing may change."""
    shutil.copytree(folder, copy)
    return tree_state(copy)


def swap_when_deleted(watched: list[Path], folder: Path, copy: Path) -> tuple[threading.Thread, list[Path]]:
    """A thread that watches `watched` (files a run deletes) and, as soon as one is gone, swaps
    the table's `folder` for a link to `copy` (`swap_for_link`): the swap in the middle of a run
    that takes no callback (the CLI). The list it returns gets where the folder went."""
    moved: list[Path] = []

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not all(p.exists() for p in watched):
                moved.append(swap_for_link(folder, copy))
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, moved
