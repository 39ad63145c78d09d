"""Pub/Sub through the real binary (--smp 2): subscribers on both shards, exact RESP2/RESP3
bytes, PUBLISH counts over all shards, per-publisher order, patterns, RESET, the slow
subscriber closed by --client-output-buffer-limit-pubsub."""

import socket
import ssl
import time

import pytest
import redis

from conftest import wait_for


class Raw:
    """One TLS connection speaking RESP by hand, so tests see the exact frames."""

    def __init__(self, server, rcvbuf=None):
        sock = socket.socket()
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.connect(("127.0.0.1", server.port))
        ctx = ssl.create_default_context(cafile=server.cert)
        self.sock = ctx.wrap_socket(sock, server_hostname="127.0.0.1")
        self.sock.settimeout(10)
        self.buf = b""
        assert self.call("AUTH", "default", server.password) == "OK"
        info = self.call("CLIENT", "INFO")
        self.shard = int(info.split("shard=")[1].split()[0])

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

    def call(self, *args):
        self.send(*args)
        return self.read()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        """A frame: str, int, None, list, ("push", list) or ("error", str); bulk as str."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ("error", rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"_":
            return None
        if kind in (b"$", b"="):
            n = int(rest)
            return None if n < 0 else self._exact(n).decode()
        if kind in (b"*", b">", b"%"):
            n = int(rest)
            if n < 0:
                return None
            items = [self.read() for _ in range(n * (2 if kind == b"%" else 1))]
            return ("push", items) if kind == b">" else items
        raise AssertionError(f"unexpected frame {line!r}")

    def close(self):
        self.sock.close()


def raw_on_each_shard(server, shards=2, attempts=64, **kwargs):
    found, spare = {}, []
    for _ in range(attempts):
        c = Raw(server, **kwargs)
        if c.shard in found:
            spare.append(c)
        else:
            found[c.shard] = c
        if len(found) == shards:
            for s in spare:
                s.close()
            return [found[i] for i in range(shards)]
    pytest.fail(f"connections reached only shards {sorted(found)}")


def numsub(client, channel):
    return dict(client.pubsub_numsub(channel))[channel]


def flood_until_unsubscribed(r, channel, limit=4000):
    payload = "x" * 16384
    sent = 0
    while sent < limit and numsub(r, channel) > 0:
        with r.pipeline(transaction=False) as pipe:
            for _ in range(50):
                pipe.publish(channel, payload)
            pipe.execute()
        sent += 50
    return sent


def test_publish_reaches_subscribers_on_every_shard_and_counts_them(server):
    subs = raw_on_each_shard(server)
    for s in subs:
        s.send("SUBSCRIBE", "news", "other")
        assert s.read() == ["subscribe", "news", 1]
        assert s.read() == ["subscribe", "other", 2]
    publishers = raw_on_each_shard(server)
    for p in publishers:
        assert p.call("PUBLISH", "news", f"from {p.shard}") == 2
        for s in subs:
            assert s.read() == ["message", "news", f"from {p.shard}"]
    assert publishers[0].call("PUBLISH", "nobody", "x") == 0
    r = server.client()
    assert sorted(r.pubsub_channels()) == ["news", "other"]
    assert sorted(r.pubsub_channels("n*")) == ["news"]
    assert r.pubsub_numsub("news", "other", "none") == [("news", 2), ("other", 2), ("none", 0)]
    stats = r.info("stats")
    assert (stats["pubsub_channels"], stats["pubsub_patterns"]) == (2, 0)
    # The subscriber closes: its subscriptions leave its shard's registry.
    subs[0].close()
    assert wait_for(lambda: numsub(r, "news") == 1)
    assert publishers[1].call("PUBLISH", "news", "last") == 1
    assert subs[1].read() == ["message", "news", "last"]


def test_patterns_on_both_shards(server):
    subs = raw_on_each_shard(server)
    for s in subs:
        s.send("PSUBSCRIBE", "foo.*", "b?r")
        assert s.read() == ["psubscribe", "foo.*", 1]
        assert s.read() == ["psubscribe", "b?r", 2]
    subs[0].send("SUBSCRIBE", "foo.bar")
    assert subs[0].read() == ["subscribe", "foo.bar", 3]
    r = server.client()
    assert r.pubsub_numpat() == 2
    # Two pattern deliveries and one channel delivery.
    assert r.publish("foo.bar", "hi") == 3
    assert subs[0].read() == ["message", "foo.bar", "hi"]
    assert subs[0].read() == ["pmessage", "foo.*", "foo.bar", "hi"]
    assert subs[1].read() == ["pmessage", "foo.*", "foo.bar", "hi"]
    assert r.publish("bar", "x") == 2
    assert r.publish("foo1", "x") == 0
    for s in subs:
        assert s.read() == ["pmessage", "b?r", "bar", "x"]
    subs[1].send("PUNSUBSCRIBE")
    got = sorted([subs[1].read(), subs[1].read()])
    assert got in (
        [["punsubscribe", "b?r", 0], ["punsubscribe", "foo.*", 1]],
        [["punsubscribe", "b?r", 1], ["punsubscribe", "foo.*", 0]],
    )
    assert subs[1].call("PUNSUBSCRIBE") == ["punsubscribe", None, 0]
    assert r.pubsub_numpat() == 2
    assert r.publish("foo.x", "y") == 1


def test_thousand_messages_from_one_publisher_arrive_in_order_on_both_shards(server):
    subs = raw_on_each_shard(server)
    for s in subs:
        assert s.call("SUBSCRIBE", "seq") == ["subscribe", "seq", 1]
    for shard in (0, 1):
        publisher = raw_on_each_shard(server)[shard]
        # One pipelined burst: the replies come back in order, each counting both.
        for i in range(1000):
            publisher.send("PUBLISH", "seq", f"{shard}-{i}")
        assert [publisher.read() for _ in range(1000)] == [2] * 1000
        for s in subs:
            got = [s.read() for _ in range(1000)]
            assert got == [["message", "seq", f"{shard}-{i}"] for i in range(1000)]


def test_resp2_subscribed_mode_exact_replies(server):
    s = Raw(server)
    assert s.call("PING") == "PONG"
    assert s.call("SUBSCRIBE", "c") == ["subscribe", "c", 1]
    assert s.call("PING") == ["pong", ""]
    assert s.call("PING", "hey") == ["pong", "hey"]
    assert s.call("GET", "k") == (
        "error",
        "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
        "RESET are allowed in this context",
    )
    assert s.call("CLIENT", "INFO")[1].startswith("ERR Can't execute 'client|info'")
    assert s.call("UNSUBSCRIBE", "nope") == ["unsubscribe", "nope", 1]
    assert s.call("UNSUBSCRIBE") == ["unsubscribe", "c", 0]
    assert s.call("UNSUBSCRIBE") == ["unsubscribe", None, 0]
    # Out of Pub/Sub mode: everything runs again.
    assert s.call("PING") == "PONG"
    assert s.call("GET", "k") is None


def test_resp3_push_frames_and_any_command_while_subscribed(server):
    subs = raw_on_each_shard(server)
    for s in subs:
        assert s.call("HELLO", "3")[0] == "server"
        s.send("SUBSCRIBE", "c")
        # The raw bytes: a push frame, not an array.
        line = s._line()
        assert line == b">3"
        assert s.read() == "subscribe"
        assert s.read() == "c"
        assert s.read() == 1
        assert s.call("SET", f"k{s.shard}", "v") == "OK"
        assert s.call("PING") == "PONG"
        assert s.call("GET", f"k{s.shard}") == "v"
        assert s.call("PSUBSCRIBE", "c*") == ("push", ["psubscribe", "c*", 2])
        assert s.call("CLIENT", "INFO").split(" flags=")[1].startswith("P ")
    r = server.client()
    assert r.publish("c", "m") == 4
    for s in subs:
        assert s.read() == ("push", ["message", "c", "m"])
        assert s.read() == ("push", ["pmessage", "c*", "c", "m"])
    info = subs[0].call("CLIENT", "INFO")
    assert " sub=1 psub=1 " in info
    # Publishing to itself: its own deliveries come before the reply, as from Redis 7.0; the
    # other shard's subscriber gets them too.
    subs[0].send("PUBLISH", "c", "self")
    assert subs[0].read() == ("push", ["message", "c", "self"])
    assert subs[0].read() == ("push", ["pmessage", "c*", "c", "self"])
    assert subs[0].read() == 4
    assert subs[1].read() == ("push", ["message", "c", "self"])
    assert subs[1].read() == ("push", ["pmessage", "c*", "c", "self"])
    # CLIENT LIST TYPE pubsub: the two subscribers, on either shard; TYPE normal: the others.
    listed = r.execute_command("CLIENT", "LIST", "TYPE", "pubsub")
    assert sorted(int(l.split("shard=")[1]) for l in listed.splitlines()) == [0, 1]
    assert all(" sub=1 psub=1 " in l for l in listed.splitlines())
    normal = r.execute_command("CLIENT", "LIST", "TYPE", "normal")
    assert all(" sub=0 psub=0 " in l for l in normal.splitlines()) and normal


def test_reset_leaves_every_subscription(server):
    subs = raw_on_each_shard(server)
    r = server.client()
    for s in subs:
        assert s.call("SUBSCRIBE", "r") == ["subscribe", "r", 1]
        assert s.call("PSUBSCRIBE", "r*") == ["psubscribe", "r*", 2]
    assert r.publish("r", "1") == 4
    for s in subs:
        assert s.read() == ["message", "r", "1"]
        assert s.read() == ["pmessage", "r*", "r", "1"]
    assert subs[0].call("RESET") == "RESET"
    assert r.pubsub_numsub("r") == [("r", 1)]
    assert r.publish("r", "2") == 2
    assert subs[1].read() == ["message", "r", "2"]
    assert subs[1].read() == ["pmessage", "r*", "r", "2"]
    # RESET deauthenticates; the connection is no longer subscribed.
    assert subs[0].call("PING") == ("error", "NOAUTH Authentication required.")


def test_client_reply_off_still_sends_pubsub_frames(server):
    s = Raw(server)
    s.send("CLIENT", "REPLY", "OFF")
    assert s.call("SUBSCRIBE", "q") == ["subscribe", "q", 1]
    assert server.client().publish("q", "v") == 1
    assert s.read() == ["message", "q", "v"]


def test_publish_inside_multi_counts_every_shard(server):
    subs = raw_on_each_shard(server)
    for s in subs:
        assert s.call("SUBSCRIBE", "t") == ["subscribe", "t", 1]
    r = server.client()
    pipe = r.pipeline(transaction=True)
    pipe.publish("t", "a").set("x", "1").publish("t", "b")
    assert pipe.execute() == [2, True, 2]
    for s in subs:
        assert s.read() == ["message", "t", "a"]
        assert s.read() == ["message", "t", "b"]


def test_pubsub_errors_and_command_info(server):
    r = server.client()
    with pytest.raises(redis.ResponseError, match=r"^unknown subcommand 'foo'\. Try PUBSUB HELP\.$"):
        r.execute_command("PUBSUB", "foo")
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'pubsub\|numpat' command$"):
        r.execute_command("PUBSUB", "NUMPAT", "x")
    with pytest.raises(redis.ResponseError, match=r"^unknown subcommand or wrong number of arguments for 'channels'\. Try PUBSUB HELP\.$"):
        r.execute_command("PUBSUB", "channels", "a", "b")
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'publish' command$"):
        r.execute_command("PUBLISH", "a")
    info = Raw(server).call("COMMAND", "INFO", "publish", "subscribe")
    assert info[0][:3] == ["publish", 3, ["pubsub", "loading", "stale", "fast"]]
    assert info[1][:3] == ["subscribe", -2, ["pubsub", "noscript", "loading", "stale"]]
    assert r.config_get("client-output-buffer-limit")["client-output-buffer-limit"].endswith(
        "pubsub 33554432 8388608 60")


def test_subscriber_that_never_reads_is_closed(server_factory):
    server = server_factory("--smp", "2", "--client-output-buffer-limit-pubsub", "256kb 0 0")
    r = server.client()
    assert r.config_get("client-output-buffer-limit")["client-output-buffer-limit"].endswith(
        "pubsub 262144 0 0")
    subs = raw_on_each_shard(server, rcvbuf=4096)
    for s in subs:
        assert s.call("SUBSCRIBE", "flood") == ["subscribe", "flood", 1]
    # Far more than the socket buffers hold: both subscribers (one per shard) must be closed.
    sent = flood_until_unsubscribed(r, "flood")
    assert wait_for(lambda: numsub(r, "flood") == 0, timeout=10), sent
    assert sent < 4000
    assert wait_for(lambda: any("--client-output-buffer-limit-pubsub" in l for l in server.lines))
    # A normal client is unaffected and the server goes on.
    assert r.publish("flood", "x") == 0
    assert r.ping() is True


def test_config_set_pubsub_class_applies_to_open_subscribers(server):
    r = server.client()
    subs = raw_on_each_shard(server, rcvbuf=4096)
    for s in subs:
        assert s.call("SUBSCRIBE", "cfg") == ["subscribe", "cfg", 1]
    assert r.config_set("client-output-buffer-limit", "pubsub 128kb 0 0") is True
    assert flood_until_unsubscribed(r, "cfg") < 4000
    assert wait_for(lambda: numsub(r, "cfg") == 0, timeout=10)


def test_client_kill_type_pubsub_closes_only_subscribers(server):
    r = server.client()
    subs = raw_on_each_shard(server)
    for s in subs:
        assert s.call("PSUBSCRIBE", "k*") == ["psubscribe", "k*", 1]
    idle = raw_on_each_shard(server)
    assert r.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 2
    assert wait_for(lambda: r.pubsub_numpat() == 0)
    for c in idle:
        assert c.call("PING") == "PONG"
