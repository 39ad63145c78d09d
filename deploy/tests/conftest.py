"""Shared fixtures for the deploy/ tests.

`shardline_server` (session scope) starts the real server on loopback with ephemeral ports
and a fresh data directory, and stops it (SIGTERM, then SIGKILL) after the session. Only
tests that ask for it start a server. The binary is `$SHARDLINE_BIN`, by default
`<repo>/target/debug/shardline` (build it first: `cargo build --bin shardline`).

`start_shardline(*args)` is the same as a context manager, for tests that need other flags.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO / "target" / "debug" / "shardline"
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0

# Start-up lines (stderr log, stdout on first run):
#   ... listening on 127.0.0.1:38293 (TLS by rustls), metrics on http://127.0.0.1:34559/metrics, ...
#   shardline: created /x/users with user 'default' and password: hzQJKa5qwuuOL3ZmicjvsjRx
LISTEN_RE = re.compile(r"listening on (\d+\.\d+\.\d+\.\d+):(\d+)")
METRICS_RE = re.compile(r"metrics on (http://\d+\.\d+\.\d+\.\d+:\d+/metrics)")
PASSWORD_RE = re.compile(r"with user '([^']+)' and password: (\S+)")


def shardline_bin() -> Path:
    return Path(os.environ.get("SHARDLINE_BIN", str(DEFAULT_BIN)))


@dataclass
class ShardlineServer:
    """A running server: where it listens, how to log in, its output so far."""

    proc: subprocess.Popen
    data_dir: Path
    host: str = ""
    port: int = 0
    metrics_url: str = ""
    user: str = "default"
    password: str = ""
    _out: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def cert(self) -> Path:
        """The generated development certificate (CA for clients)."""
        return self.data_dir / "cert.pem"

    def output(self) -> str:
        """Everything the server wrote to stdout and stderr so far."""
        with self._lock:
            return "".join(self._out)

    def scrape(self, timeout: float = 5.0) -> str:
        """GET /metrics, the Prometheus text format."""
        with urllib.request.urlopen(self.metrics_url, timeout=timeout) as resp:
            assert resp.status == 200, resp.status
            return resp.read().decode()

    def redis_cli_args(self) -> list[str]:
        """redis-cli / redis-benchmark connection flags (TLS, user, password)."""
        return ["--tls", "--cacert", str(self.cert), "-h", self.host, "-p", str(self.port),
                "--user", self.user, "--pass", self.password]


def _pump(stream, server: ShardlineServer) -> None:
    for line in iter(stream.readline, ""):
        with server._lock:
            server._out.append(line)
    stream.close()


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def start_shardline(*extra_args: str) -> Iterator[ShardlineServer]:
    """Starts the server on 127.0.0.1 (ephemeral client and metrics ports) in a new data
    directory, waits (at most 20 s) until both ports answer, yields it, stops it."""
    binary = shardline_bin()
    if not binary.is_file():
        pytest.fail(f"shardline binary not found at {binary}: build it with "
                    "`cargo build --bin shardline` or set SHARDLINE_BIN")
    with tempfile.TemporaryDirectory(prefix="shardline-test-") as tmp:
        data_dir = Path(tmp) / "data"
        env = dict(os.environ, RUST_LOG="info")  # the start-up line is logged at info
        proc = subprocess.Popen(
            [str(binary), "--bind", "127.0.0.1:0", "--metrics-bind", "127.0.0.1:0",
             "--data-dir", str(data_dir), *extra_args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env)
        server = ShardlineServer(proc=proc, data_dir=data_dir)
        pumps = [threading.Thread(target=_pump, args=(s, server), daemon=True)
                 for s in (proc.stdout, proc.stderr)]
        for t in pumps:
            t.start()
        try:
            _wait_ready(server)
            yield server
        finally:
            _stop(proc)
            for t in pumps:
                t.join(timeout=STOP_TIMEOUT_S)


def _wait_ready(server: ShardlineServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        out = server.output()
        listen, metrics, password = (LISTEN_RE.search(out), METRICS_RE.search(out),
                                     PASSWORD_RE.search(out))
        if listen and metrics and password:
            server.host, server.port = listen.group(1), int(listen.group(2))
            server.metrics_url = metrics.group(1)
            server.user, server.password = password.group(1), password.group(2)
            if _answers(server):
                return
        if server.proc.poll() is not None:
            pytest.fail(f"shardline exited with {server.proc.returncode} at start:\n{out}")
        if time.monotonic() > deadline:
            pytest.fail(f"shardline not ready within {START_TIMEOUT_S:.0f} s:\n{out}")
        time.sleep(0.1)


def _answers(server: ShardlineServer) -> bool:
    try:
        with socket.create_connection((server.host, server.port), timeout=1):
            pass
        server.scrape(timeout=1)
        return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def shardline_server() -> Iterator[ShardlineServer]:
    """One server for the session, with `DEBUG SLEEP` allowed (to provoke a reactor stall)."""
    with start_shardline("--enable-debug-command") as server:
        yield server
