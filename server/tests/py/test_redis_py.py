"""redis-py over TLS against the real server: exact replies, RESP2 and RESP3."""

import socket
import ssl

import pytest
import redis


def shard_of(client):
    return int(client.client_info()["shard"])


def clients_on_each_shard(server, shards=2, attempts=64):
    """Opens connections until one lands on every shard (SO_REUSEPORT spreads them)."""
    found = {}
    for _ in range(attempts):
        c = server.client()
        found.setdefault(shard_of(c), c)
        if len(found) == shards:
            return [found[i] for i in range(shards)]
    pytest.fail(f"connections reached only shards {sorted(found)}")


@pytest.mark.parametrize("protocol", [2, 3])
def test_basic_commands_exact_replies(server, protocol):
    r = server.client(protocol=protocol)
    assert r.ping() is True
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.set("k", "w", get=True) == "v"
    assert r.set("k", "x", nx=True) is None
    assert r.incrby("counter", 5) == 5
    assert r.rpush("l", "a", "b", "c") == 3
    assert r.lrange("l", 0, -1) == ["a", "b", "c"]
    assert r.lpop("l", 2) == ["a", "b"]
    assert r.lpop("nolist") is None
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hgetall("h") == {"a": "1", "b": "2"}
    assert r.sadd("s", "x", "y") == 2
    assert r.smembers("s") == {"x", "y"}
    assert r.expire("k", 100) is True
    assert 99 <= r.ttl("k") <= 100
    assert r.pttl("missing") == -2
    assert r.type("h") == "hash"
    assert r.mset({"m1": "1", "m2": "2", "m3": "3"}) is True
    assert r.mget("m1", "nope", "m3") == ["1", None, "3"]
    assert r.delete("m1", "m2", "m3", "nope") == 3
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE Operation against a key holding the wrong kind of value$"):
        r.get("h")


@pytest.mark.parametrize("protocol", [2, 3])
def test_sorted_sets_with_redis_py(server, protocol):
    # z1 and z4 live on shard 0, z2 and z3 on shard 1: the multi-key commands compose across them.
    r = server.client(protocol=protocol)

    def pairs(v):
        # redis-py gives (member, score) tuples in RESP2, [member, score] lists in RESP3.
        return [tuple(x) for x in v]

    assert r.zadd("z1", {"a": 1, "b": 2.5, "c": 3}) == 3
    assert r.zadd("z2", {"b": 10, "d": 0.1}) == 2
    assert r.zscore("z1", "b") == 2.5
    assert r.zscore("z2", "d") == 0.1
    assert pairs(r.zrange("z1", 0, -1, withscores=True)) == [("a", 1.0), ("b", 2.5), ("c", 3.0)]
    assert r.zrevrangebyscore("z1", "+inf", "(1") == ["c", "b"]
    assert r.zrank("z1", "c") == 2
    assert r.zincrby("z1", 1, "a") == 2.0
    assert r.zunionstore("z3", ["z1", "z2"]) == 4
    assert pairs(r.zrange("z3", 0, -1, withscores=True)) == [
        ("d", 0.1), ("a", 2.0), ("c", 3.0), ("b", 12.5)]
    assert pairs(r.zinter(["z1", "z2"], withscores=True, aggregate="MAX")) == [("b", 10.0)]
    assert r.zdiff(["z1", "z2"]) == ["a", "c"]
    assert r.zrangestore("z4", "z3", 0, 1) == 2
    assert pairs(r.zpopmin("z4", 1)) == [("d", 0.1)]
    key, popped = r.zmpop(2, ["nosuch", "z4"], max=True)
    # redis-py leaves ZMPOP's RESP2 scores as text.
    assert (key, [(m, float(sc)) for m, sc in popped]) == ("z4", [("a", 2.0)])
    assert r.exists("z4") == 0
    assert r.type("z3") == "zset"


def test_hello_3_returns_a_map(server):
    r = server.client(protocol=3)
    hello = r.execute_command("HELLO", "3")
    assert hello["proto"] == 3
    assert hello["server"] == "redis"
    assert hello["mode"] == "standalone"
    assert hello["role"] == "master"
    assert hello["modules"] == []
    assert hello["id"] == r.client_id()


def test_hello_auth_and_errors(server):
    # redis-py sends CLIENT SETINFO on connect; before AUTH that gets NOAUTH (as from Redis 7.2
    # with requirepass), so the unauthenticated client must not send it.
    raw = server.client(username=None, password=None, lib_name=None, lib_version=None)
    with pytest.raises(redis.AuthenticationError):
        raw.get("k")
    with pytest.raises(redis.ResponseError, match="unsupported protocol version"):
        raw.execute_command("HELLO", "4")
    with pytest.raises(redis.ResponseError, match="Protocol version is not an integer or out of range"):
        raw.execute_command("HELLO", "x")
    hello = raw.execute_command("HELLO", "2", "AUTH", "default", server.password, "SETNAME", "me")
    assert hello[hello.index("proto") + 1] == 2
    assert raw.client_getname() == "me"


def test_pipeline_of_many_commands_keeps_order(server):
    r = server.client()
    pipe = r.pipeline(transaction=False)
    for i in range(500):
        pipe.set(f"p:{i}", i)
        pipe.get(f"p:{i}")
        pipe.incr("p:counter")
    replies = pipe.execute()
    assert replies[0::3] == [True] * 500
    assert replies[1::3] == [str(i) for i in range(500)]
    assert replies[2::3] == list(range(1, 501))


def test_default_pipeline_of_100k_commands_written_before_reading(server):
    # redis-py writes the whole pipeline, then reads: the server must keep reading while
    # its replies wait to be written (before flow control this deadlocked and timed out).
    r = server.client()
    r.set("big:value", "v" * 1000)
    pipe = r.pipeline(transaction=False)
    for i in range(100_000):
        pipe.get("big:value")
    replies = pipe.execute()
    assert len(replies) == 100_000
    assert replies == ["v" * 1000] * 100_000
    assert r.ping() is True


def test_transactional_pipeline_across_shards(server):
    r = server.client()
    # redis-py's default pipeline is a MULTI/EXEC transaction.
    pipe = r.pipeline()
    for i in range(100):
        pipe.set(f"t:{i}", i)
    pipe.incrby("t:counter", 5)
    pipe.lpush("t:0", "x")
    pipe.mget([f"t:{i}" for i in range(100)])
    replies = pipe.execute(raise_on_error=False)
    assert replies[:100] == [True] * 100
    assert replies[100] == 5
    assert isinstance(replies[101], redis.ResponseError) and "WRONGTYPE" in str(replies[101])
    assert replies[102] == [str(i) for i in range(100)]
    # All keys on one shard (hash tag): the same, run as one job there.
    pipe = r.pipeline()
    pipe.hset("{user:7}profile", mapping={"name": "ann"})
    pipe.incr("{user:7}logins")
    pipe.hget("{user:7}profile", "name")
    assert pipe.execute() == [1, 1, "ann"]


def test_transaction_with_watch_retries_after_a_concurrent_change(server):
    # redis-py's optimistic locking: WATCH, read, MULTI/EXEC; a change by another client
    # (here on the other shard) between WATCH and EXEC makes EXEC fail and the helper retry.
    a, b = clients_on_each_shard(server)
    a.set("w:counter", 0)
    seen = []

    def increment(pipe):
        value = int(pipe.get("w:counter"))
        if not seen:
            b.set("w:counter", 100)
        seen.append(value)
        pipe.multi()
        pipe.set("w:counter", value + 1)

    assert a.transaction(increment, "w:counter") == [True]
    assert seen == [0, 100]
    assert a.get("w:counter") == "101"


def test_keys_written_on_one_shard_are_read_on_the_other(server):
    a, b = clients_on_each_shard(server)
    assert shard_of(a) == 0 and shard_of(b) == 1
    for i in range(200):
        a.set(f"x:{i}", f"from-a-{i}")
        b.set(f"y:{i}", f"from-b-{i}")
    assert b.mget([f"x:{i}" for i in range(200)]) == [f"from-a-{i}" for i in range(200)]
    assert a.mget([f"y:{i}" for i in range(200)]) == [f"from-b-{i}" for i in range(200)]
    assert a.dbsize() == 400
    assert b.delete(*[f"x:{i}" for i in range(200)]) == 200
    assert a.dbsize() == 200


def test_large_value_round_trips(server):
    r = server.client(decode_responses=False)
    value = bytes(range(256)) * 4096  # 1 MiB, every byte value
    assert r.set(b"big", value) is True
    assert r.get(b"big") == value
    assert r.strlen(b"big") == len(value)


def test_malformed_input_closes_only_that_connection(server):
    good = server.client()
    good.set("survivor", "yes")
    ctx = ssl.create_default_context(cafile=server.cert)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        with ctx.wrap_socket(sock, server_hostname="localhost") as tls:
            tls.sendall(b"*1\r\n$abc\r\n")
            reply = tls.recv(1024)
            assert reply == b"-ERR Protocol error: invalid bulk length\r\n"
            assert tls.recv(1024) == b""  # closed (after close_notify)
    assert good.get("survivor") == "yes"


def test_unauthenticated_request_limits(server):
    ctx = ssl.create_default_context(cafile=server.cert)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        with ctx.wrap_socket(sock, server_hostname="localhost") as tls:
            tls.sendall(b"*11\r\n")
            assert tls.recv(1024) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        with ctx.wrap_socket(sock, server_hostname="localhost") as tls:
            tls.sendall(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n")
            assert tls.recv(1024) == b"-ERR Protocol error: unauthenticated bulk length\r\n"


def test_inline_ping_and_quit(server):
    ctx = ssl.create_default_context(cafile=server.cert)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        with ctx.wrap_socket(sock, server_hostname="localhost") as tls:
            # A NUL byte ends an inline line (as in Redis's C string): the line is empty and
            # skipped without a reply.
            tls.sendall(b"\x00\x01\x02\r\n")
            tls.sendall(f"AUTH {server.password}\r\nPING\r\nQUIT\r\n".encode())
            data = b""
            while True:
                chunk = tls.recv(1024)
                if not chunk:
                    break
                data += chunk
            assert data == b"+OK\r\n+PONG\r\n+OK\r\n"


def test_reset_deauthenticates(server):
    r = server.client(single_connection_client=True, lib_name=None, lib_version=None)
    assert r.set("k", "v") is True
    assert r.execute_command("RESET") == "RESET"
    with pytest.raises(redis.AuthenticationError):
        r.get("k")


def test_client_setinfo_and_info(server):
    r = server.client(single_connection_client=True)
    assert r.client_setname("worker-1") is True
    assert r.execute_command("CLIENT", "SETINFO", "LIB-NAME", "mylib") == "OK"
    info = r.client_info()
    assert info["name"] == "worker-1"
    assert info["lib-name"] == "mylib"
    assert info["user"] == "default"
