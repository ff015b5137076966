"""`make run` from a fresh clone to the first page, then a second start: `python bench/startup.py`
measures both and, with `--record`, records them in bench/RESULTS.md (between the `make run` markers);
tests/test_make_run.py runs the same measurement and writes its figures to var/ only.

The clone: `git clone` of this checkout, then this working tree's tracked and untracked-but-not-
ignored files copied over it and the files deleted here deleted there, so that uncommitted work is
what runs (on CI's clean clone of the committed tree that changes nothing).

Packages are not downloaded nor installed again: the clone's `.venv` is this checkout's, hard-linked
file by file (copied across file systems), with its scripts' `#!` lines and the editable install of
Cleanline pointed at the clone, and `.venv/.installed` touched so that `make setup` finds it up to
date. So the figures are `make run` with the packages installed (the state after `make setup`, or
after `make test` on CI): fixture tables, migrations, collectstatic, registration, the web server,
worker and beat. The started console has its own Redis database (13), SQLite file and port."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = (ROOT.parent / "shared" / "fixtures" / "hudi-rs-tables").resolve()
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- make run: begin -->", "<!-- make run: end -->"
READY = "Cleanline console ready: "
BUILT = "demo lake: every Spark table is built"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def clone_checkout(target: Path, *, source: Path = ROOT) -> None:
    """A fresh clone of `source` with its working tree's files over it and a relocated copy of its venv."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(source), str(target)], check=True)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=source,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        here, there = source / name, target / name
        if here.is_file():
            there.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(here, there)
        elif there.is_file():  # deleted in the working tree, not yet committed
            there.unlink()
    _relocate_venv(source / ".venv", target / ".venv")
    (target / ".venv" / ".installed").touch()


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _relocate_venv(venv: Path, target: Path) -> None:
    if not (venv / "bin" / "python").exists():
        raise RuntimeError(f"{venv}: no virtual environment (run `make setup` first)")
    shutil.copytree(venv, target, symlinks=True, copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    old, new = str(venv.parent), str(target.parent)
    site = next((target / "lib").glob("python3*/site-packages"))
    texts = [p for p in (target / "bin").iterdir() if p.is_file() and not p.is_symlink()]
    texts += [*site.glob("*.pth"), *site.glob("__editable__*"), *site.glob("*.dist-info/direct_url.json")]
    for path in texts:
        data = path.read_bytes()
        if old.encode() in data and b"\0" not in data:
            path.unlink()  # a hard link: write a new file, never the original's content
            path.write_bytes(data.replace(old.encode(), new.encode()))
            path.chmod(0o755 if path.parent.name == "bin" else 0o644)


@dataclass
class Start:
    """One `make run`: seconds to the first page (login page answering 200), its output."""
    seconds: float
    lines: list[str] = field(default_factory=list)
    built_seconds: float | None = None  # until the background Spark build ended, when waited for


class Console:
    """`make run` in `checkout` on its own port, Redis database and SQLite file."""

    def __init__(self, checkout: Path, *, port: int, redis_url: str, debug: str | None = None) -> None:
        self.checkout, self.port = checkout, port
        self.url = f"http://127.0.0.1:{port}/"
        env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "PYTEST_VERSION", "SECRET_KEY",
                                                                "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV",
                                                                "MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
        env |= {"PORT": str(port), "HOST": "127.0.0.1", "REDIS_URL": redis_url, "FIXTURES": str(FIXTURES),
                "DATABASE_URL": f"sqlite:///{checkout / 'var' / 'console.sqlite3'}",
                "CLEANLINE_PLAN_STORE": str(checkout / "var" / "plan-store")}
        if debug is not None:
            env["DEBUG"] = debug
        self.env = env
        self.lines: list[str] = []
        self.process: subprocess.Popen[str] | None = None

    def start(self, *, timeout: float = 900, wait_for_lake: bool = False) -> Start:
        began = time.monotonic()
        self.lines = []
        self.process = subprocess.Popen(["make", "run"], cwd=self.checkout, env=self.env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        seconds = None
        while time.monotonic() - began < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"make run stopped ({self.process.returncode}):\n" + "\n".join(self.lines))
            if self.get("login/")[0] == 200:
                seconds = time.monotonic() - began
                break
            time.sleep(0.1)
        if seconds is None:
            raise RuntimeError(f"no page after {timeout} s:\n" + "\n".join(self.lines))
        self.wait_for_line(lambda line: line.startswith("login:"), after=READY, timeout=30)
        start = Start(seconds, self.lines)
        if wait_for_lake and not any(line.startswith(BUILT) for line in self.lines) and any(
                "in the background" in line for line in self.lines):
            self.wait_for_line(lambda line: line.startswith(BUILT), timeout=timeout)
            start.built_seconds = time.monotonic() - began
        return start

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, matches: object, *, after: str | None = None, timeout: float) -> None:
        test = matches if callable(matches) else (lambda line: line == matches)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = list(self.lines)
            if after is not None:
                marks = [i for i, line in enumerate(lines) if line.startswith(after)]
                lines = lines[marks[-1] + 1:] if marks else []
            if any(test(line) for line in lines):
                return
            time.sleep(0.1)
        raise RuntimeError(f"no such line after {timeout} s:\n" + "\n".join(self.lines))

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as response:
                return int(response.status), response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")
        except (OSError, urllib.error.URLError):
            return 0, ""

    def interrupt(self, *, timeout: float = 60) -> int:
        """Ctrl-C as a terminal sends it: SIGINT to the whole process group; waits until `make`
        ends and its output is read. Returns its exit status."""
        assert self.process is not None
        process, self.process = self.process, None
        os.killpg(process.pid, signal.SIGINT)
        status = process.wait(timeout=timeout)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the reader thread drains what is left
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        return status

    def stop(self) -> None:
        """Stops the whole process group (make, run.sh, gunicorn, worker, beat, any Spark build)."""
        if self.process is None:
            return
        group = self.process.pid
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                self.process.poll()  # reaps make, the group's leader
                try:
                    os.killpg(group, 0)
                except ProcessLookupError:
                    self.process = None
                    return
                time.sleep(0.2)
        self.process = None


def measure(work: Path, *, redis_url: str, wait_for_lake: bool) -> dict[str, object]:
    """Clone into `work`, time two starts of `make run`; the figures."""
    checkout = work / "cleanline"
    began = time.monotonic()
    clone_checkout(checkout)
    cloned = time.monotonic() - began
    console = Console(checkout, port=free_port(), redis_url=redis_url)
    try:
        first = console.start(wait_for_lake=wait_for_lake)
    finally:
        console.stop()
    try:
        second = console.start()
    finally:
        console.stop()
    return {"clone_seconds": round(cloned, 1), "first_seconds": round(first.seconds, 1),
            "lake_seconds": None if first.built_seconds is None else round(first.built_seconds, 1),
            "second_seconds": round(second.seconds, 1), "cores": os.cpu_count(),
            "spark_on_second_start": any("in the background" in line for line in second.lines)}


def record(figures: dict[str, object]) -> None:
    lake = figures["lake_seconds"]
    section = "\n".join([
        BEGIN,
        "## `make run`: fresh clone to first page, and a second start (bench/startup.py)",
        "",
        f"Measured on {figures['cores']} cores; the login page answering 200 counts as the first page. "
        "The clone has this checkout's packages (a relocated copy of its `.venv`: nothing downloaded or "
        "installed, see bench/startup.py).",
        "",
        "| start | seconds to the first page |",
        "|---|---|",
        f"| fresh clone (`git clone`, then `make run`) | {figures['first_seconds']} |",
        f"| second start | {figures['second_seconds']} |",
        "",
        (f"The Spark demo tables, built in the background on the first start, were all in the catalog after "
         f"{lake} s; the second start started no Spark." if lake is not None else
         "The background Spark build was not waited for."),
        "Cloning and relocating the venv (not in the figures) took "
        f"{figures['clone_seconds']} s.",
        END,
    ])
    text = RESULTS.read_text()
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text)


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cleanline-startup-") as work:
        figures = measure(Path(work), redis_url=os.environ.get("STARTUP_REDIS_URL", "redis://127.0.0.1:6379/13"),
                          wait_for_lake=True)
    print(json.dumps(figures, indent=2))
    if "--record" in sys.argv[1:]:  # as every benchmark: bench/RESULTS.md only when asked
        record(figures)


if __name__ == "__main__":
    sys.exit(main())
