"""A real Spark standalone cluster on 127.0.0.1 for tests: a master and two workers of one core
each, started with the `pyspark` package's own launcher (`spark-class ...deploy.master.Master` /
`...deploy.worker.Worker`), each in its own process group, stopped (and their executors with
them) when the fixture ends. Executors run this environment's Python (`PYSPARK_PYTHON`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cluster_env(work: Path) -> dict[str, str]:
    """What the cluster's daemons and a driver need: this venv's Python for executors, loopback only."""
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(work / "logs"), "SPARK_WORKER_DIR": str(work / "work"),
            "SPARK_NO_DAEMONIZE": "1"}


@dataclass
class StandaloneCluster:
    work: Path
    workers: int = 2
    master_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def env(self) -> dict[str, str]:
        return cluster_env(self.work)

    def _daemon(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 (kept open for the daemon's life)
        process = subprocess.Popen([str(SPARK_CLASS), *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.processes.append(process)
        return process

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as response:
            found: dict[str, object] = json.loads(response.read())
            return found

    def start(self) -> StandaloneCluster:
        self.work.mkdir(parents=True, exist_ok=True)
        self._daemon("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.master_port), "--webui-port", str(self.ui_port))
        for n in range(self.workers):
            self._daemon(f"worker{n}", "org.apache.spark.deploy.worker.Worker", self.url, "--cores", "1",
                         "--memory", "1g", "--host", "127.0.0.1", "--webui-port", str(free_port()),
                         "--work-dir", str(self.work / f"worker{n}"))
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.state().get("aliveworkers") == self.workers:
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                logs = "\n".join((self.work / f"{p}.log").read_text(errors="replace")[-2000:]
                                 for p in ("master", "worker0"))
                raise RuntimeError(f"the Spark standalone cluster did not start within 120 s:\n{logs}")
            time.sleep(0.5)

    def executor_pids(self) -> list[int]:
        """The executor JVMs the workers launched (children of the worker JVMs)."""
        pids = []
        for worker in self.processes[1:]:
            found = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True)
            pids += [int(p) for p in found.stdout.split()]
        return pids

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for pid in self.executor_pids():
            os.kill(pid, signal.SIGKILL)
