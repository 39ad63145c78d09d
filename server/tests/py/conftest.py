"""Starts the real shardline binary on ephemeral loopback ports for redis-py tests."""

import os
import re
import signal
import subprocess
import tempfile
import threading
import time

import pytest
import redis

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BINARY = os.environ.get("SHARDLINE_BIN", os.path.join(ROOT, "target", "debug", "shardline"))


class Server:
    """A running shardline process; `stop()` terminates it."""

    def __init__(self, *args):
        self.dir = tempfile.TemporaryDirectory()
        self.lines = []
        self.proc = subprocess.Popen(
            [BINARY, "--bind", "127.0.0.1:0", "--metrics-bind", "127.0.0.1:0",
             "--data-dir", self.dir.name, *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "RUST_LOG": "info"},
        )
        self.port = self.metrics_port = None
        self.password = None
        started = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                m = re.search(r"password: (\S+)", line)
                if m:
                    self.password = m.group(1)
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    self.metrics_port = int(m.group(1))
                    started.set()

        threading.Thread(target=pump, daemon=True).start()
        if not started.wait(20):
            self.proc.kill()
            raise RuntimeError("shardline did not start:\n" + "\n".join(self.lines))
        self.cert = os.path.join(self.dir.name, "cert.pem")

    def client(self, **kwargs):
        options = dict(host="127.0.0.1", port=self.port, ssl=True, ssl_ca_certs=self.cert,
                       username="default", password=self.password, socket_timeout=10,
                       decode_responses=True)
        options.update(kwargs)
        return redis.Redis(**options)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


@pytest.fixture
def server():
    s = Server("--smp", "2")
    yield s
    s.stop()


@pytest.fixture
def server_factory():
    started = []

    def make(*args):
        s = Server(*args)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def wait_for(predicate, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False
