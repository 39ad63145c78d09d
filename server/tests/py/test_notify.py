"""Keyspace notifications (notify-keyspace-events) through the real binary (--smp 2): the
subscriber on one shard, the keys owned by the other, exact messages and their order for a
representative command of each class, expired events (on access and by the sweep), composed
cross-shard commands, MULTI/EXEC, and nothing at all with the default (off)."""

import binascii
import time

import pytest

from test_pubsub import Raw, raw_on_each_shard


def owner(key, shards=2):
    """The shard owning `key`: CRC16 hash slot (with hash tags), split evenly over shards."""
    k = key.encode()
    start = k.find(b"{")
    if start >= 0:
        end = k.find(b"}", start + 1)
        if end > start + 1:
            k = k[start + 1:end]
    slot = binascii.crc_hqx(k, 0) & 16383
    return slot * shards // 16384


def key_on(shard, prefix):
    for i in range(1000):
        key = f"{prefix}{i}"
        if owner(key) == shard:
            return key
    raise AssertionError("no key found")


@pytest.fixture
def setup(server):
    """(subscriber on shard 0 psubscribed to __key*, client on shard 0, client on shard 1)."""
    sub, c0 = raw_on_each_shard(server)[0], raw_on_each_shard(server)[0]
    c1 = raw_on_each_shard(server)[1]
    assert sub.call("PSUBSCRIBE", "__key*") == ["psubscribe", "__key*", 1]
    return sub, c0, c1


def expect(sub, *pairs):
    """The next messages are exactly `pairs` of (channel, message)."""
    got = [sub.read() for _ in pairs]
    assert got == [["pmessage", "__key*", c, m] for c, m in pairs]


def both(db, key, event):
    return [(f"__keyspace@{db}__:{key}", event), (f"__keyevent@{db}__:{event}", key)]


def marker(sub, publisher):
    """PUBLISH a marker from `publisher` and check it is the next message `sub` gets."""
    assert publisher.call("PUBLISH", "__keymarker", "end") == 1
    assert sub.read() == ["pmessage", "__key*", "__keymarker", "end"]


def test_default_off_sends_nothing(setup):
    sub, c0, c1 = setup
    assert c0.call("CONFIG", "GET", "notify-keyspace-events") == ["notify-keyspace-events", ""]
    k = key_on(1, "off")
    for cmd in (["SET", k, "v"], ["EXPIRE", k, "100"], ["DEL", k], ["LPUSH", k, "a"],
                ["RPOP", k], ["HSET", k, "f", "v"], ["SADD", "x" + k, "m"]):
        c1.call(*cmd)
    c1.call("SET", k + "e", "v", "PX", "1")
    time.sleep(0.25)
    # The owner shard's events and this marker would travel the same way, in order.
    marker(sub, c1)


def test_config_get_set_renders_redis_canonical_string(setup):
    _, c0, c1 = setup
    for given, shown in (("KEA", "AKE"), ("gKE", "gKE"), ("$lshzxeKE", "$lshzxeKE"),
                         ("KA", "AK"), ("nmE", "nEm"), ("", "")):
        assert c0.call("CONFIG", "SET", "notify-keyspace-events", given) == "OK"
        # Installed on every shard.
        for c in (c0, c1):
            assert c.call("CONFIG", "GET", "notify-keyspace-events") == [
                "notify-keyspace-events", shown]
    assert c0.call("CONFIG", "SET", "notify-keyspace-events", "KEw") == (
        "error",
        "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")


def test_one_command_per_class_from_the_other_shard(setup):
    sub, c0, c1 = setup
    assert c0.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == "OK"
    s, l, h, st = (key_on(1, p) for p in ("str", "list", "hash", "set"))
    # Sent by the subscriber's shard, run on the owner shard: events come back from there.
    c0.call("SET", s, "1")
    expect(sub, *both(0, s, "set"))
    c0.call("INCRBY", s, "5")
    expect(sub, *both(0, s, "incrby"))
    c0.call("EXPIRE", s, "100")
    expect(sub, *both(0, s, "expire"))
    c0.call("DEL", s)
    expect(sub, *both(0, s, "del"))
    c0.call("LPUSH", l, "a", "b")
    c0.call("RPOP", l, "2")
    expect(sub, *both(0, l, "lpush"), *both(0, l, "rpop"), *both(0, l, "del"))
    c0.call("HSET", h, "f", "1")
    c0.call("HINCRBY", h, "f", "2")
    c0.call("HDEL", h, "f")
    expect(sub, *both(0, h, "hset"), *both(0, h, "hincrby"), *both(0, h, "hdel"),
           *both(0, h, "del"))
    c0.call("SADD", st, "a", "b")
    c0.call("SREM", st, "x")
    c0.call("SREM", st, "a")
    expect(sub, *both(0, st, "sadd"), *both(0, st, "srem"))
    # Another database: its number in the channel names.
    assert c0.call("SELECT", "5") == "OK"
    c0.call("SET", s, "v")
    expect(sub, *both(5, s, "set"))
    marker(sub, c1)


def test_masks_keyspace_only_and_new_keys(setup):
    sub, c0, c1 = setup
    k = key_on(1, "mask")
    assert c1.call("CONFIG", "SET", "notify-keyspace-events", "Kl") == "OK"
    c1.call("SET", k + "s", "v")
    c1.call("RPUSH", k, "a")
    expect(sub, (f"__keyspace@0__:{k}", "rpush"))
    assert c1.call("CONFIG", "SET", "notify-keyspace-events", "En") == "OK"
    c1.call("SET", k + "n", "v")
    c1.call("SET", k + "n", "w")
    c1.call("RPUSH", k, "b")
    expect(sub, (f"__keyevent@0__:new", k + "n"))
    marker(sub, c1)


def test_expired_events_on_access_and_by_the_sweep(setup):
    sub, c0, c1 = setup
    assert c0.call("CONFIG", "SET", "notify-keyspace-events", "Ex") == "OK"
    lazy, active = key_on(1, "lazy"), key_on(1, "active")
    assert c0.call("SET", lazy, "v", "PX", "20") == "OK"
    time.sleep(0.03)
    assert c0.call("GET", lazy) is None
    expect(sub, ("__keyevent@0__:expired", lazy))
    # Never touched: the owner shard's sweep (every 100 ms) removes it.
    assert c0.call("PSETEX", active, "50", "v") == "OK"
    expect(sub, ("__keyevent@0__:expired", active))
    assert c0.call("EXISTS", active) == 0


def test_cross_shard_rename_and_multi_exec_in_redis_order(setup):
    sub, c0, c1 = setup
    assert c0.call("CONFIG", "SET", "notify-keyspace-events", "KEg") == "OK"
    src, dst = key_on(1, "src"), key_on(0, "dst")
    c0.call("SET", src, "v")
    assert c0.call("RENAME", src, dst) == "OK"
    expect(sub, *both(0, src, "rename_from"), *both(0, dst, "rename_to"))
    a, b = key_on(1, "ma"), key_on(1, "mb")
    c0.call("MSET", a, "1", b, "2")
    assert c0.call("MULTI") == "OK"
    for cmd in (["EXPIRE", a, "100"], ["DEL", b], ["PERSIST", a]):
        assert c0.call(*cmd) == "QUEUED"
    assert c0.call("EXEC") == [1, 1, 1]
    expect(sub, *both(0, a, "expire"), *both(0, b, "del"), *both(0, a, "persist"))
    marker(sub, c1)



def test_cross_shard_store_and_move_events_in_redis_order(setup):
    """SUNIONSTORE, ZUNIONSTORE, ZMPOP, LMOVE and SMOVE with keys on both shards publish
    Redis 7.0.15's events once, after the composition: no `restore` or `del` of its write
    steps."""
    sub, c0, c1 = setup
    s1, s2, sdst = key_on(1, "s1_"), key_on(0, "s2_"), key_on(0, "sdst")
    z1, z2, zdst = key_on(0, "z1_"), key_on(1, "z2_"), key_on(1, "zdst")
    lsrc, ldst = key_on(1, "lsrc"), key_on(0, "ldst")
    c0.call("SADD", s1, "a")
    c0.call("SADD", s2, "b")
    c0.call("ZADD", z1, "1", "a")
    c0.call("ZADD", z2, "2", "b")
    c0.call("RPUSH", lsrc, "x")
    assert c0.call("CONFIG", "SET", "notify-keyspace-events", "KEAn") == "OK"
    assert c0.call("SUNIONSTORE", sdst, s1, s2) == 2
    expect(sub, *both(0, sdst, "new"), *both(0, sdst, "sunionstore"))
    assert c0.call("SUNIONSTORE", sdst, s1, s2) == 2
    expect(sub, *both(0, sdst, "sunionstore"))
    assert c1.call("SINTERSTORE", sdst, s1, s2) == 0
    expect(sub, *both(0, sdst, "del"))
    assert c0.call("ZUNIONSTORE", zdst, "2", z1, z2) == 2
    expect(sub, *both(0, zdst, "new"), *both(0, zdst, "zunionstore"))
    assert c0.call("ZINTERSTORE", zdst, "2", z1, z2) == 0
    expect(sub, *both(0, zdst, "del"))
    assert c0.call("ZINTERSTORE", zdst, "2", z1, z2) == 0
    assert c0.call("ZMPOP", "2", key_on(0, "zmiss"), z2, "MIN")[0] == z2
    expect(sub, *both(0, z2, "zpopmin"), *both(0, z2, "del"))
    assert c0.call("LMOVE", lsrc, ldst, "RIGHT", "LEFT") == "x"
    expect(
        sub,
        *both(0, ldst, "new"),
        *both(0, ldst, "lpush"),
        *both(0, lsrc, "rpop"),
        *both(0, lsrc, "del"),
    )
    assert c0.call("SMOVE", s1, s2, "a") == 1
    expect(sub, *both(0, s1, "srem"), *both(0, s1, "del"), *both(0, s2, "sadd"))
    assert c0.call("SMOVE", s2, s1, "zz") == 0
    marker(sub, c1)

def test_evicted_events(setup):
    sub, c0, c1 = setup
    assert c0.call("CONFIG", "SET", "notify-keyspace-events", "Ee") == "OK"
    assert c0.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == "OK"
    k = key_on(1, "evict")
    assert c0.call("SET", k, "bar") == "OK"
    assert c0.call("CONFIG", "SET", "maxmemory", "1") == "OK"
    # The owner shard evicts before its next command, refused or not.
    c1.call("SET", key_on(1, "other"), "x")
    expect(sub, ("__keyevent@0__:evicted", k))
    assert c0.call("CONFIG", "SET", "maxmemory", "0") == "OK"
    assert c0.call("EXISTS", k) == 0
