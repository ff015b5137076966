"""Helpers of the lock tests (fixtures are in conftest.py): a real Apache ZooKeeper server on
127.0.0.1 on a free port (conftest.py's `zookeeper` fixture starts it), and a real Apache
Curator `InterProcessMutex` contender to prove Cleanline's ZooKeeper lock excludes it.

`ZooKeeperServer(workdir).start()` runs `org.apache.zookeeper.server.ZooKeeperServerMain` with
Java from Debian's `zookeeper` package (`scripts/ensure-zookeeper.sh` installs it) or from an
Apache ZooKeeper release unpacked at `$CLEANLINE_ZOOKEEPER_HOME`. Short ticks (200 ms) let a
test use sessions of a second or two; `expire_session(client_id)` ends a live session the way
ZooKeeper does it for real (a second connection takes the session over and closes it).

`CuratorContender` runs a small Java program against the Curator and ZooKeeper client jars that
PySpark ships: it takes and gives back an InterProcessMutex (with HoodieInterProcessMutex's node
data) on commands written to its stdin, answering on stdout.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import free_port, stop_process

DEBIAN_CLASSPATH = "/usr/share/java/zookeeper.jar"  # its manifest lists the jars it needs


def zookeeper_classpath() -> str:
    home = os.environ.get("CLEANLINE_ZOOKEEPER_HOME")
    if home:
        return os.pathsep.join([str(Path(home) / "lib" / "*"), str(Path(home) / "conf")])
    if Path(DEBIAN_CLASSPATH).exists():
        return DEBIAN_CLASSPATH
    raise RuntimeError("ZooKeeper is not installed: run scripts/ensure-zookeeper.sh (as root), or set "
                       "CLEANLINE_ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release")


def java_command() -> str:
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java not found: scripts/ensure-system.sh installs Java 17")
    return java


@dataclass
class ZooKeeperServer:
    """One standalone ZooKeeper server process on 127.0.0.1."""

    workdir: Path
    tick_ms: int = 200
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        """The connect string (`hoodie.write.lock.zookeeper.url`)."""
        return f"127.0.0.1:{self.port}"

    def _config(self) -> Path:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "zoo.cfg"
        config.write_text("\n".join([
            f"tickTime={self.tick_ms}",
            f"dataDir={data}",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            f"minSessionTimeout={2 * self.tick_ms}",
            "maxSessionTimeout=60000",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            "",
        ]))
        return config

    def ruok(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"ruok")
                return sock.recv(16) == b"imok"
        except OSError:
            return False

    def start(self, *, attempts: int = 3) -> ZooKeeperServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        classpath, java = zookeeper_classpath(), java_command()
        for _ in range(attempts):
            self.port = free_port()
            config = self._config()
            with open(self.workdir / "zookeeper.log", "ab") as log:
                self.process = subprocess.Popen(
                    [java, "-Xmx256m", f"-Dzookeeper.log.dir={self.workdir}", "-cp", classpath,
                     "org.apache.zookeeper.server.ZooKeeperServerMain", str(config)],
                    stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.process.poll() is None:
                if self.ruok():
                    return self
                time.sleep(0.1)
            self.stop()  # the port was taken meanwhile, or it hung: again
        raise RuntimeError(f"ZooKeeper did not start; see {self.workdir / 'zookeeper.log'}")

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None

    def expire_session(self, client_id: tuple[int, bytes]) -> None:
        """End the session `client_id` (session id, password) on the server: a second client
        attaches to it and closes it, as ZooKeeper's own tests expire sessions. The first
        client's ephemeral nodes are deleted and it gets SESSION_EXPIRED on its next contact."""
        from kazoo.client import KazooClient

        thief = KazooClient(hosts=self.hosts, client_id=client_id, timeout=10)
        thief.start(timeout=15)
        thief.stop()
        thief.close()


def pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


# HoodieInterProcessMutex is InterProcessMutex with the node data `application_id=<id>`; this
# program takes it exactly as ZookeeperBasedLockProvider would (same Curator client settings).
CURATOR_CONTENDER_SOURCE = r"""
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;

public class CuratorContender {
  static class AppIdMutex extends InterProcessMutex {
    private final byte[] data;
    AppIdMutex(CuratorFramework client, String path, String appId) {
      super(client, path);
      this.data = ("application_id=" + appId).getBytes(StandardCharsets.UTF_8);
    }
    @Override protected byte[] getLockNodeBytes() { return data; }
  }

  public static void main(String[] args) throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.builder().connectString(args[0])
        .retryPolicy(new BoundedExponentialBackoffRetry(1000, 16000, 15))
        .sessionTimeoutMs(60000).connectionTimeoutMs(15000).build();
    client.start();
    if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) { System.out.println("NOCONNECT"); return; }
    InterProcessMutex mutex = new AppIdMutex(client, args[1], args[2]);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    System.out.println("READY");
    System.out.flush();
    String line;
    while ((line = in.readLine()) != null) {
      if (line.startsWith("acquire ")) {
        boolean ok = mutex.acquire(Long.parseLong(line.substring(8)), TimeUnit.MILLISECONDS);
        System.out.println(ok ? "ACQUIRED" : "TIMEOUT");
      } else if (line.equals("release")) {
        mutex.release();
        System.out.println("RELEASED");
      } else if (line.equals("quit")) {
        break;
      }
      System.out.flush();
    }
    client.close();
  }
}
"""


@dataclass
class CuratorContender:
    """The Java program above in its own JVM, driven line by line."""

    workdir: Path
    hosts: str
    lock_path: str
    application_id: str = "curator-contender"
    process: subprocess.Popen[str] | None = field(default=None, repr=False)

    def start(self) -> CuratorContender:
        source = self.workdir / "CuratorContender.java"
        self.workdir.mkdir(parents=True, exist_ok=True)
        source.write_text(CURATOR_CONTENDER_SOURCE)
        self.process = subprocess.Popen(
            [java_command(), "-cp", f"{pyspark_jars()}/*", str(source), self.hosts, self.lock_path,
             self.application_id],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=self.workdir)
        assert self.read_line(60) == "READY"
        return self

    def read_line(self, timeout: float) -> str:
        import selectors

        assert self.process is not None and self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise TimeoutError(f"the Curator contender said nothing for {timeout} s")
        return self.process.stdout.readline().strip()

    def command(self, line: str, *, timeout: float = 60) -> str:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.read_line(timeout)

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write("quit\n")
                self.process.stdin.flush()
                self.process.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.process = None
