"""Lua scripting as applications use it: redis-py's Lock, a Celery round trip, cross-shard atomicity.

Every test runs against shardline (`--smp 2`, TLS, the generated `default` password) and, when
REFERENCE_REDIS_PORT is set, against the redis-server listening on that loopback port, so the
tests themselves are checked against Redis 7.0. The reference server is plain TCP without a
password unless REFERENCE_REDIS_CA names the PEM file of its certificate (then TLS) and
REFERENCE_REDIS_PASSWORD its `default` user's password; its databases are flushed by each test.

    redis-server --port 6430 --save '' --appendonly no --daemonize yes
    REFERENCE_REDIS_PORT=6430 python3 -m pytest -q server/tests/py/test_scripting_apps.py
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from urllib.parse import quote

import pytest
import redis
from redis.crc import key_slot
from redis.exceptions import LockError, LockNotOwnedError

from conftest import Server, wait_for


class Target:
    """One server under test: how to reach it with redis-py and with a Celery URL."""

    def __init__(self, name, port, password=None, ca=None, stop=None):
        self.name = name
        self.port = port
        self.password = password
        self.ca = ca
        self.stop = stop

    def client(self, **kwargs):
        options = dict(host="127.0.0.1", port=self.port, socket_timeout=10, decode_responses=True)
        if self.password is not None:
            options.update(username="default", password=self.password)
        if self.ca is not None:
            options.update(ssl=True, ssl_ca_certs=self.ca)
        options.update(kwargs)
        return redis.Redis(**options)

    def url(self, db):
        """A kombu/Celery URL for database `db`: `rediss://user:password@host:port/db?ssl_...`."""
        auth = f"default:{quote(self.password, safe='')}@" if self.password is not None else ""
        if self.ca is None:
            return f"redis://{auth}127.0.0.1:{self.port}/{db}"
        # kombu (broker) and Celery's Redis backend both read ssl_cert_reqs and ssl_ca_certs
        # from the query string of a rediss:// URL; the backend refuses one without ssl_cert_reqs.
        return (f"rediss://{auth}127.0.0.1:{self.port}/{db}"
                f"?ssl_cert_reqs=required&ssl_ca_certs={quote(self.ca, safe='')}")


@pytest.fixture(params=["shardline", "redis-server"])
def target(request):
    if request.param == "redis-server":
        port = os.environ.get("REFERENCE_REDIS_PORT")
        if not port:
            pytest.skip("REFERENCE_REDIS_PORT is not set")
        t = Target("redis-server", int(port), os.environ.get("REFERENCE_REDIS_PASSWORD"),
                   os.environ.get("REFERENCE_REDIS_CA"))
        # A fresh start for each test: no keys, no cached scripts (so the first EVALSHA of a
        # client library gets NOSCRIPT, as on a fresh shardline).
        t.client().flushall()
        t.client().script_flush()
        yield t
        return
    s = Server("--smp", "2")
    yield Target("shardline", s.port, s.password, s.cert, s.stop)
    s.stop()


# ---------------------------------------------------------------------------------------------
# a. redis-py Lock: SET NX PX to acquire, EVALSHA of its release/extend/reacquire scripts.


def test_lock_acquire_extend_reacquire_release(target):
    r = target.client()
    lock = r.lock("app:lock", timeout=10)
    other = r.lock("app:lock", timeout=10)
    shas = [hashlib.sha1(s.encode()).hexdigest() for s in
            (lock.LUA_RELEASE_SCRIPT, lock.LUA_EXTEND_SCRIPT, lock.LUA_REACQUIRE_SCRIPT)]
    # A fresh server knows none of them: redis-py's first EVALSHA gets NOSCRIPT, then it
    # loads the script and sends the EVALSHA again.
    assert r.script_exists(*shas) == [False, False, False]
    with pytest.raises(redis.exceptions.NoScriptError, match=r"^No matching script\. Please use EVAL\.$"):
        r.evalsha(shas[0], 1, "app:lock", "token")
    assert lock.acquire(blocking=False) is True
    assert r.get("app:lock") == lock.local.token.decode()
    assert 9000 < r.pttl("app:lock") <= 10000
    assert other.acquire(blocking=False) is False
    assert lock.owned() is True and other.owned() is False
    assert lock.locked() is True

    assert lock.extend(5) is True  # adds 5 s to what is left
    assert 14000 < r.pttl("app:lock") <= 15000
    assert lock.extend(20, replace_ttl=True) is True
    assert 19000 < r.pttl("app:lock") <= 20000
    assert lock.reacquire() is True  # back to the lock's timeout
    assert 9000 < r.pttl("app:lock") <= 10000

    assert lock.release() is None
    assert r.exists("app:lock") == 0
    assert lock.locked() is False
    # Released by its owner, the lock is free for the next one.
    assert other.acquire(blocking=False) is True
    assert r.get("app:lock") == other.local.token.decode()
    other.release()
    # The scripts ran as EVALSHA, loaded after a NOSCRIPT: the server keeps them by SHA1.
    assert r.script_exists(*shas) == [True, True, True]


def test_lock_context_manager_and_blocking_timeout(target):
    r = target.client()
    with r.lock("app:ctx", timeout=5) as held:
        assert held.owned() is True
        assert 4000 < r.pttl("app:ctx") <= 5000
        waiter = r.lock("app:ctx", timeout=5, sleep=0.05)
        start = time.monotonic()
        assert waiter.acquire(blocking_timeout=0.3) is False
        assert 0.2 <= time.monotonic() - start < 2.0
    assert r.exists("app:ctx") == 0
    # A lock without timeout has no TTL and cannot be extended.
    forever = r.lock("app:forever")
    assert forever.acquire() is True
    assert r.pttl("app:forever") == -1
    with pytest.raises(LockError, match="^Cannot extend a lock with no timeout$"):
        forever.extend(1)
    forever.release()
    assert r.exists("app:forever") == 0


def test_lock_release_by_non_owner_raises(target):
    r = target.client()
    lock = r.lock("app:owned", timeout=10)
    assert lock.acquire(blocking=False) is True
    token = lock.local.token
    # Another party overwrites the key: the script finds a foreign token and leaves it alone.
    r.set("app:owned", "someone-else", px=10000)
    with pytest.raises(LockNotOwnedError, match="^Cannot extend a lock that's no longer owned$"):
        lock.extend(5)
    with pytest.raises(LockNotOwnedError, match="^Cannot reacquire a lock that's no longer owned$"):
        lock.reacquire()
    with pytest.raises(LockNotOwnedError, match="^Cannot release a lock that's no longer owned$"):
        lock.release()
    assert r.get("app:owned") == "someone-else"
    assert 9000 < r.pttl("app:owned") <= 10000
    # A non-owner that presents a wrong token gets the same error; the owner's lock stays.
    r.delete("app:owned")
    assert lock.acquire(blocking=False) is True
    intruder = r.lock("app:owned", timeout=10)
    intruder.local.token = b"not-the-token"
    with pytest.raises(LockNotOwnedError, match="^Cannot release a lock that's no longer owned$"):
        intruder.release()
    assert r.get("app:owned") == lock.local.token.decode() != token.decode()
    lock.release()
    # An expired lock is no longer owned either.
    short = r.lock("app:short", timeout=0.2)
    assert short.acquire(blocking=False) is True
    time.sleep(0.4)
    assert r.exists("app:short") == 0
    with pytest.raises(LockNotOwnedError, match="^Cannot release a lock that's no longer owned$"):
        short.release()
    # The raw script: 0 for a missing key or a foreign token, 1 (and the key gone) for the owner.
    release = r.register_script(redis.lock.Lock.LUA_RELEASE_SCRIPT)
    assert release(keys=["app:raw"], args=["t"]) == 0
    r.set("app:raw", "t")
    assert release(keys=["app:raw"], args=["u"]) == 0
    assert r.get("app:raw") == "t"
    assert release(keys=["app:raw"], args=["t"]) == 1
    assert r.exists("app:raw") == 0


def test_lock_blocking_acquire_waits_for_release(target):
    first_client, second_client = target.client(), target.client()
    first = first_client.lock("app:queue", timeout=10)
    second = second_client.lock("app:queue", timeout=10, sleep=0.02)
    first_acquired = threading.Event()
    times = {}
    errors = []

    def hold():
        try:
            assert first.acquire(blocking=False) is True
            times["first_acquired"] = time.monotonic()
            first_acquired.set()
            time.sleep(0.5)
            times["first_releasing"] = time.monotonic()
            first.release()
        except Exception as e:  # reported by the main thread
            errors.append(e)
            first_acquired.set()

    def wait():
        try:
            first_acquired.wait(5)
            times["second_started"] = time.monotonic()
            times["second_result"] = second.acquire(blocking=True, blocking_timeout=5)
            times["second_acquired"] = time.monotonic()
            second.release()
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=hold), threading.Thread(target=wait)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert times["second_result"] is True
    assert times["first_acquired"] <= times["second_started"]
    # The second client got the lock only after the first let it go, and soon after
    # (it polls every 20 ms).
    assert times["first_releasing"] < times["second_acquired"] < times["first_releasing"] + 1.0
    assert times["second_acquired"] - times["second_started"] >= 0.4
    assert first_client.exists("app:queue") == 0


# ---------------------------------------------------------------------------------------------
# b. Celery: Redis broker (kombu) and Redis result backend, a solo worker in a subprocess.

CELERY_APP = textwrap.dedent("""
    from celery import Celery

    app = Celery("sl_apps", broker=BROKER_URL, backend=BACKEND_URL)
    app.conf.update(broker_connection_retry_on_startup=True, result_expires=600,
                    worker_hijack_root_logger=False, task_acks_late=True)

    @app.task
    def add(x, y):
        return x + y

    @app.task
    def join_words(words):
        return "-".join(words)
""")


CELERY_CLIENT = textwrap.dedent("""
    import json, time
    from sl_tasks import add, join_words, app

    first = add.delay(2, 3)
    # The worker may still be starting: wait up to 60 s for the first result.
    value = first.get(timeout=60)
    second = join_words.delay(["scripts", "on", NAME])
    third = add.apply_async((40, 2), countdown=0)
    print(json.dumps({"results": [value, second.get(timeout=30), third.get(timeout=30)],
                      "first_state": first.state, "ids": [first.id, second.id, third.id]}))
    app.close()
""")


def test_celery_round_trip(target, tmp_path):
    pytest.importorskip("celery")
    # Broker on database 0, results on database 1.
    source = CELERY_APP.replace("BROKER_URL", repr(target.url(0)))
    (tmp_path / "sl_tasks.py").write_text(source.replace("BACKEND_URL", repr(target.url(1))))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    # The client side runs in a process of its own too: Celery's result consumer threads must
    # not outlive this test in the pytest process (they stalled the threads of later tests).
    (tmp_path / "sl_client.py").write_text(CELERY_CLIENT.replace("NAME", repr(target.name)))

    log = open(tmp_path / "worker.log", "w+")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "sl_tasks", "worker", "--pool", "solo",
         "--loglevel", "INFO", "--hostname", f"sl-{target.name}@localhost"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        client = subprocess.run([sys.executable, "sl_client.py"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        if client.returncode != 0:
            log.seek(0)
            pytest.fail(f"client failed ({client.returncode}): {client.stdout}{client.stderr}\n"
                        f"worker (exit code {worker.poll()}):\n{log.read()}")
        got = json.loads(client.stdout.strip().splitlines()[-1])
        assert got["results"] == [5, f"scripts-on-{target.name}", 42]
        assert got["first_state"] == "SUCCESS"
        assert worker.poll() is None
        # The results live in the backend's database as celery-task-meta-<id>.
        backend = target.client(db=1)
        assert backend.exists(*(f"celery-task-meta-{i}" for i in got["ids"][:2])) == 2
        # At start the worker restored unacknowledged messages under kombu's Mutex: SET
        # unacked_mutex NX PX 300000, then redis-py Lock's release script by EVALSHA (NOSCRIPT,
        # SCRIPT LOAD, EVALSHA again), which deleted the mutex.
        broker = target.client()
        assert broker.script_exists(hashlib.sha1(redis.lock.Lock.LUA_RELEASE_SCRIPT.encode())
                                    .hexdigest()) == [True]
        assert broker.exists("unacked_mutex") == 0
        # Each message was acknowledged (late, after its result was stored).
        assert wait_for(lambda: broker.hlen("unacked") == 0 and broker.zcard("unacked_index") == 0)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(5)
        log.close()


# ---------------------------------------------------------------------------------------------
# c. Cross-shard atomicity: scripts moving units between keys on different shards, watched by
#    readers that must never see a half-done move.

TRANSFER = """
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if v < n then
  return 0
end
redis.call('DECRBY', KEYS[1], n)
redis.call('INCRBY', KEYS[2], n)
return 1
"""


def owner_shard(key, shards=2):
    """shardline's placement: CRC16 hash slot, slots split into `shards` contiguous ranges."""
    return key_slot(key.encode()) * shards // 16384


def test_cross_shard_transfers_are_atomic(target):
    src, dst = "a", "b"
    # a is slot 15495 (shard 1 of 2), b slot 3300 (shard 0): every script spans both shards.
    assert (key_slot(b"a"), key_slot(b"b")) == (15495, 3300)
    assert owner_shard(src) != owner_shard(dst)
    r = target.client()
    total, start_src = 1000, 700
    r.mset({src: start_src, dst: total - start_src})
    sha = r.script_load(TRANSFER)
    assert sha == hashlib.sha1(TRANSFER.encode()).hexdigest()

    writers, per_writer = 20, 50
    results = []
    observed = {"mget": [], "multi": []}
    errors = []
    done = threading.Event()
    go = threading.Barrier(writers + 2)
    deadline = time.monotonic() + 30

    def write(i):
        c = target.client()
        try:
            go.wait(10)
            mine = []
            for j in range(per_writer):
                if (i + j) % 2:
                    mine.append(c.eval(TRANSFER, 2, src, dst, 1))
                else:
                    mine.append(c.evalsha(sha, 2, src, dst, 1))
            results.extend(mine)
        except Exception as e:
            errors.append(e)
        finally:
            c.close()

    def read(kind):
        c = target.client()
        try:
            go.wait(10)
            while time.monotonic() < deadline:
                finished = done.is_set()
                if kind == "mget":
                    a, b = c.mget(src, dst)
                else:
                    pipe = c.pipeline(transaction=True)
                    pipe.get(src)
                    pipe.get(dst)
                    a, b = pipe.execute()
                observed[kind].append((int(a), int(b)))
                if finished:
                    break
        except Exception as e:
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    threads += [threading.Thread(target=read, args=(k,)) for k in ("mget", "multi")]
    for t in threads[writers:] + threads[:writers]:
        t.start()
    for t in threads[:writers]:
        t.join(max(0.1, deadline - time.monotonic()))
    done.set()
    for t in threads[writers:]:
        t.join(max(0.1, deadline + 1 - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "did not finish within 30 s"
    assert errors == []

    # 1,000 scripts ran; the first 700 found a unit to move, the other 300 found none.
    assert len(results) == writers * per_writer
    assert sorted(set(results)) == [0, 1]
    assert results.count(1) == start_src and results.count(0) == total - start_src
    assert r.mget(src, dst) == ["0", str(total)]
    for kind, seen in observed.items():
        assert len(seen) >= 10, f"{kind} reader observed only {len(seen)} states"
        bad = [s for s in seen if sum(s) != total]
        assert bad == [], f"{kind} saw a half-done transfer: {bad[:5]}"
        # Values only ever move one way: a never grows between two reads of one reader.
        assert all(x[0] >= y[0] for x, y in zip(seen, seen[1:])), kind
        assert seen[-1] == (0, total)
