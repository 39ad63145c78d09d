//! Lua scripting through the real binary: EVAL replies and errors byte for byte against a
//! reference redis-server 7.0 (RESP2 and RESP3), one script cache for every shard, and scripts
//! that write keys they did not declare on several shards.

mod common;

use common::reference::RedisReference;
use common::shards::{client_on, shard_of};
use common::{RawClient, Server};

/// Ports set aside for this suite's reference redis-servers.
const REFERENCE_PORTS: std::ops::Range<u16> = 6450..6470;

/// One EVAL case: the script, its KEYS and its ARGV.
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// The EVAL request of `case`.
fn eval_args(case: &Case) -> Vec<Vec<u8>> {
    let (script, keys, argv) = case;
    let mut args = vec![
        b"EVAL".to_vec(),
        script.as_bytes().to_vec(),
        keys.len().to_string().into_bytes(),
    ];
    args.extend(keys.iter().map(|k| k.as_bytes().to_vec()));
    args.extend(argv.iter().map(|a| a.as_bytes().to_vec()));
    args
}

/// Sends `args` to both servers; a description of the difference when the replies differ.
fn differs(ours: &mut RawClient, redis: &mut RawClient, args: &[Vec<u8>]) -> Option<String> {
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    let (got, want) = (ours.request(&args), redis.request(&args));
    (got != want).then(|| {
        format!(
            "{:?}\n  shardline: {:?}\n  redis:     {:?}",
            args.iter()
                .map(|a| String::from_utf8_lossy(a))
                .collect::<Vec<_>>(),
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        )
    })
}

/// Sends every request to both servers and panics listing every request whose replies differ.
fn assert_same_replies(ours: &mut RawClient, redis: &mut RawClient, requests: &[Vec<Vec<u8>>]) {
    let mismatches: Vec<String> = requests
        .iter()
        .filter_map(|args| differs(ours, redis, args))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} replies differ from redis-server's:\n{}",
        mismatches.len(),
        requests.len(),
        mismatches.join("\n")
    );
}

fn owned(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

/// Conversions (Lua → RESP2), errors with their `script: <sha>, on @user_script:<line>.`
/// suffix, redis.call / pcall errors, the sandbox, numkeys errors: the same bytes as Redis.
const RESP2_CASES: &[Case] = &[
    ("return 1", &[], &[]),
    ("return 'x'", &[], &[]),
    ("return 3.99", &[], &[]),
    ("return -0.5", &[], &[]),
    ("return nil", &[], &[]),
    ("return true", &[], &[]),
    ("return false", &[], &[]),
    ("return {1, 2, {3, 'a', {}}}", &[], &[]),
    ("return {1, 2, nil, 4}", &[], &[]),
    ("return {1, 2.7, true, false, 'z'}", &[], &[]),
    ("return redis.status_reply('FINE')", &[], &[]),
    ("return {ok = 'FINE'}", &[], &[]),
    ("return {err = 'MYERR custom'}", &[], &[]),
    ("return {err = 'no code here'}", &[], &[]),
    ("return redis.error_reply('MYERR via error_reply')", &[], &[]),
    ("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", &["k1", "k2"], &["a1", "a2"]),
    ("return redis.call('set', KEYS[1], ARGV[1])", &["str"], &["hello"]),
    ("return redis.call('get', KEYS[1])", &["str"], &[]),
    ("return redis.call('get', KEYS[1])", &["missing"], &[]),
    ("return redis.call('incrbyfloat', KEYS[1], ARGV[1])", &["fl"], &["1.5"]),
    ("redis.call('rpush', KEYS[1], 'a', 'b', 'c'); return redis.call('lrange', KEYS[1], 0, -1)", &["list"], &[]),
    ("redis.call('hset', KEYS[1], 'f', 'v'); return redis.call('hgetall', KEYS[1])", &["hash"], &[]),
    ("return redis.call('zadd', KEYS[1], 1.5, 'm')", &["zs"], &[]),
    ("return redis.call('zscore', KEYS[1], 'm')", &["zs"], &[]),
    ("return redis.call('incr', KEYS[1])", &["str"], &[]),
    ("return redis.pcall('incr', KEYS[1])", &["str"], &[]),
    ("local r = redis.pcall('incr', KEYS[1]); return type(r) .. ':' .. r['err']", &["str"], &[]),
    ("return redis.call('nosuchcommand')", &[], &[]),
    ("return redis.pcall('nosuchcommand')", &[], &[]),
    ("return redis.call('set', KEYS[1])", &["str"], &[]),
    ("return redis.call()", &[], &[]),
    ("return redis.call('ping')", &[], &[]),
    ("return redis.call('exists', KEYS[1], KEYS[2])", &["str", "missing"], &[]),
    ("error('boom')", &[], &[]),
    ("\n\nerror('on line three')", &[], &[]),
    ("error({err = 'CODE raised table'})", &[], &[]),
    ("local t = nil\nreturn t.x", &[], &[]),
    ("return +", &[], &[]),
    ("x = 1", &[], &[]),
    ("return undefined_global", &[], &[]),
    ("return redis.sha1hex('')", &[], &[]),
    ("return redis.sha1hex('shardline')", &[], &[]),
    ("return cjson.encode({1, 2, 'x'})", &[], &[]),
    ("return cjson.decode('[1,2,3]')", &[], &[]),
    ("return tostring(0.1)", &[], &[]),
    ("return string.format('%d-%s', 7, 'x')", &[], &[]),
    ("return tonumber('0x10')", &[], &[]),
    ("return loadstring", &[], &[]),
    ("return type(os.time)", &[], &[]),
    ("return redis.call('select', 1)", &[], &[]),
    ("redis.call('select', 1); redis.call('set', KEYS[1], 'db1'); return redis.call('get', KEYS[1])", &["seldb"], &[]),
    ("return redis.call('get', KEYS[1])", &["seldb"], &[]),
    ("return redis.call('eval', 'return 1', 0)", &[], &[]),
    ("return redis.call('multi')", &[], &[]),
    ("return redis.call('subscribe', 'ch')", &[], &[]),
    ("return redis.setresp(5)", &[], &[]),
    ("redis.log(redis.LOG_WARNING, 'from a test'); return redis.LOG_NOTICE", &[], &[]),
    ("return redis.REDIS_VERSION", &[], &[]),
    ("return bit.band(7, 3)", &[], &[]),
    ("return struct.pack('>I2', 258)", &[], &[]),
    ("return cmsgpack.unpack(cmsgpack.pack({1, 'a'}))", &[], &[]),
];

#[test]
fn eval_replies_and_errors_match_redis() {
    let server = Server::start(&["--smp", "2"]);
    let redis = RedisReference::start_in_ports(REFERENCE_PORTS, &[]);
    let mut ours = RawClient::authenticated(&server);
    let mut theirs = RawClient::plain(redis.addr);
    let mut requests: Vec<Vec<Vec<u8>>> = RESP2_CASES.iter().map(eval_args).collect();
    // numkeys errors and a missing script.
    for args in [
        &["EVAL", "return 1", "-1"][..],
        &["EVAL", "return 1", "2", "only-one"],
        &["EVAL", "return 1", "abc"],
        &["EVAL", "return #KEYS", "+1", "k"],
        &["EVAL", "return #KEYS", "-0", "k"],
        &["EVAL", "redis.setresp('3') return redis.call('ping')", "0"],
        &["EVAL", "return 1"],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        &["EVALSHA", "not-a-sha", "0"],
        &[
            "EVAL_RO",
            "return redis.call('set', KEYS[1], 'x')",
            "1",
            "ro",
        ],
        &["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "str"],
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')",
            "1",
            "ro",
        ],
        &["EVAL", "#!lua flags=no-writes\nreturn 7", "0"],
        &["EVAL", "#!lua flags=bogus\nreturn 7", "0"],
        &["EVAL", "#!python\nreturn 7", "0"],
    ] {
        requests.push(owned(args));
    }
    assert_same_replies(&mut ours, &mut theirs, &requests);
}

/// Replies that differ by protocol: the caller's (HELLO 3) and the script's
/// (`redis.setresp(3)`): maps, sets, doubles, booleans, nulls.
const RESP3_CASES: &[Case] = &[
    ("redis.call('hset', KEYS[1], 'f', 'v'); redis.setresp(3); return redis.call('hgetall', KEYS[1])", &["h3"], &[]),
    ("redis.call('hset', KEYS[1], 'f', 'v'); return redis.call('hgetall', KEYS[1])", &["h3"], &[]),
    ("redis.setresp(3); return redis.call('get', KEYS[1])", &["nothing"], &[]),
    ("redis.call('sadd', KEYS[1], 'm'); redis.setresp(3); return redis.call('smembers', KEYS[1])", &["s3"], &[]),
    ("redis.call('zadd', KEYS[1], 2.5, 'm'); redis.setresp(3); return redis.call('zscore', KEYS[1], 'm')", &["z3"], &[]),
    ("redis.setresp(3); return redis.call('exists', KEYS[1])", &["h3"], &[]),
    ("redis.setresp(3); local r = redis.call('hgetall', KEYS[1]); return type(r.map)", &["h3"], &[]),
    ("redis.setresp(3); local r = redis.call('zscore', KEYS[1], 'm'); return type(r.double)", &["z3"], &[]),
    ("return {map = {a = 1}}", &[], &[]),
    ("return {set = {x = true}}", &[], &[]),
    ("return {double = 3.14}", &[], &[]),
    ("return {double = 0.1}", &[], &[]),
    ("return true", &[], &[]),
    ("return false", &[], &[]),
    ("return nil", &[], &[]),
    ("return {1, true, false, {map = {k = 'v'}}}", &[], &[]),
    ("return redis.call('ping')", &[], &[]),
];

#[test]
fn resp3_conversions_match_redis() {
    let server = Server::start(&["--smp", "2"]);
    let redis = RedisReference::start_in_ports(REFERENCE_PORTS, &[]);
    let mut ours = RawClient::authenticated(&server);
    let mut theirs = RawClient::plain(redis.addr);
    let requests: Vec<Vec<Vec<u8>>> = RESP3_CASES.iter().map(eval_args).collect();
    // The same cases from a RESP2 caller, then from a RESP3 one.
    assert_same_replies(&mut ours, &mut theirs, &requests);
    for client in [&mut ours, &mut theirs] {
        let hello = client.request(&[b"HELLO", b"3"]);
        assert!(
            hello.starts_with(b"%"),
            "{}",
            String::from_utf8_lossy(&hello)
        );
    }
    assert_same_replies(&mut ours, &mut theirs, &requests);
}

#[test]
fn script_load_exists_flush_match_redis() {
    let server = Server::start(&["--smp", "2"]);
    let redis = RedisReference::start_in_ports(REFERENCE_PORTS, &[]);
    let mut ours = RawClient::authenticated(&server);
    let mut theirs = RawClient::plain(redis.addr);
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"; // SHA1 of "return 1"
    let requests: Vec<Vec<Vec<u8>>> = [
        &["SCRIPT", "LOAD", "return 1"][..],
        &["SCRIPT", "LOAD", "return +"],
        &[
            "SCRIPT",
            "EXISTS",
            sha,
            "ffffffffffffffffffffffffffffffffffffffff",
            sha,
        ],
        &["SCRIPT", "EXISTS"],
        &["EVALSHA", sha, "0"],
        &["EVALSHA", &sha.to_uppercase(), "0"],
        &["EVALSHA_RO", sha, "0"],
        &["SCRIPT", "FLUSH", "ASYNC"],
        &["SCRIPT", "EXISTS", sha],
        &["EVALSHA", sha, "0"],
        &["SCRIPT", "FLUSH", "BOGUS"],
        &["SCRIPT", "FLUSH", "SYNC"],
        &["SCRIPT", "KILL"],
        &["SCRIPT", "BOGUS"],
        &["EVAL", "return 1", "0"],
        &["SCRIPT", "EXISTS", sha],
    ]
    .iter()
    .map(|args| owned(args))
    .collect();
    assert_same_replies(&mut ours, &mut theirs, &requests);
}

/// The script cache is process-wide: a script loaded through a connection of one shard runs by
/// SHA on connections of every shard, and SCRIPT FLUSH forgets it on all of them.
#[test]
fn one_script_cache_for_every_shard() {
    let server = Server::start(&["--smp", "2"]);
    let mut loader = client_on(&server, 0);
    let loaded = loader.request(&[b"SCRIPT", b"LOAD", b"return ARGV[1] .. '!'"]);
    assert_eq!(loaded.len(), 47, "{}", String::from_utf8_lossy(&loaded));
    let sha = String::from_utf8_lossy(&loaded[5..45]).into_owned();
    // Eight other connections, at least one on each shard.
    let mut others: Vec<RawClient> = vec![client_on(&server, 0), client_on(&server, 1)];
    others.extend((0..6).map(|_| RawClient::authenticated(&server)));
    let shards: Vec<usize> = others.iter_mut().map(shard_of).collect();
    assert!(shards.contains(&0) && shards.contains(&1), "{shards:?}");
    for (i, client) in others.iter_mut().enumerate() {
        let arg = format!("c{i}");
        let want = format!("${}\r\n{arg}!\r\n", arg.len() + 1);
        client.roundtrip(
            &[b"EVALSHA", sha.as_bytes(), b"0", arg.as_bytes()],
            want.as_bytes(),
        );
        client.roundtrip(&[b"SCRIPT", b"EXISTS", sha.as_bytes()], b"*1\r\n:1\r\n");
    }
    loader.roundtrip(&[b"SCRIPT", b"FLUSH"], b"+OK\r\n");
    for client in others.iter_mut().chain([&mut loader]) {
        client.roundtrip(
            &[b"EVALSHA", sha.as_bytes(), b"0", b"x"],
            b"-NOSCRIPT No matching script. Please use EVAL.\r\n",
        );
        client.roundtrip(&[b"SCRIPT", b"EXISTS", sha.as_bytes()], b"*1\r\n:0\r\n");
    }
    // Loaded again from a shard-1 connection, it runs on shard 0's.
    others[1].request(&[b"SCRIPT", b"LOAD", b"return ARGV[1] .. '!'"]);
    others[0].roundtrip(&[b"EVALSHA", sha.as_bytes(), b"0", b"y"], b"$2\r\ny!\r\n");
}

/// A script that declares no keys and writes "a" (shard 1) and "b" (shard 0) by name: it
/// touches a shard it does not hold, starts again holding every shard, and both writes land
/// on their owners, from connections of either shard, on the first and on later runs.
#[test]
fn undeclared_keys_on_several_shards() {
    let server = Server::start(&["--smp", "2"]);
    assert_eq!(shardline::keyspace::slot::owner_shard(b"a", 2), 1);
    assert_eq!(shardline::keyspace::slot::owner_shard(b"b", 2), 0);
    let script = b"redis.call('set', 'a', ARGV[1]); redis.call('set', 'b', ARGV[1]); \
                   return redis.call('incr', 'runs')";
    let mut reader = RawClient::authenticated(&server);
    for (run, shard) in [0, 1, 0, 1].into_iter().enumerate() {
        let mut client = client_on(&server, shard);
        let value = format!("v{run}");
        let want = format!(":{}\r\n", run + 1);
        client.roundtrip(&[b"EVAL", script, b"0", value.as_bytes()], want.as_bytes());
        let want = format!("*2\r\n$2\r\n{value}\r\n$2\r\n{value}\r\n");
        reader.roundtrip(&[b"MGET", b"a", b"b"], want.as_bytes());
        // Each key is on its owner shard: a later plain GET from the other shard finds it.
        let mut other = client_on(&server, 1 - shard);
        other.roundtrip(&[b"GET", b"a"], format!("$2\r\n{value}\r\n").as_bytes());
        other.roundtrip(&[b"GET", b"b"], format!("$2\r\n{value}\r\n").as_bytes());
    }
    // Undeclared reads across shards, too.
    reader.roundtrip(
        &[
            b"EVAL",
            b"return redis.call('mget', 'a', 'b', 'runs')",
            b"0",
        ],
        b"*3\r\n$2\r\nv3\r\n$2\r\nv3\r\n$1\r\n4\r\n",
    );
}

/// A script that writes a key of its own shard and then reads an undeclared key of the other
/// shard: the first run fails at that call (its write stays, as after any error in a Redis
/// script); every later run holds every shard from the start and succeeds.
#[test]
fn a_script_that_wrote_before_an_undeclared_key_holds_every_shard_next_time() {
    let server = Server::start(&["--smp", "2"]);
    assert_eq!(shardline::keyspace::slot::owner_shard(b"a", 2), 1);
    assert_eq!(shardline::keyspace::slot::owner_shard(b"b", 2), 0);
    let mut client = client_on(&server, 0);
    client.roundtrip(&[b"SET", b"a", b"x"], b"+OK\r\n");
    let script: &[u8] = b"redis.call('set', KEYS[1], 'w'); return redis.call('get', ARGV[1])";
    let first = client.request(&[b"EVAL", script, b"1", b"b", b"a"]);
    assert!(
        first.starts_with(
            b"-ERR this script wrote and then touched a key on a shard it had not locked"
        ),
        "{}",
        String::from_utf8_lossy(&first)
    );
    client.roundtrip(&[b"GET", b"b"], b"$1\r\nw\r\n");
    for _ in 0..3 {
        client.roundtrip(&[b"EVAL", script, b"1", b"b", b"a"], b"$1\r\nx\r\n");
    }
}
