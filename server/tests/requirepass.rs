//! CONFIG SET requirepass (Redis 7.0): sets the default user's password, or with "" makes it
//! need none (`default:nopass` in the users file), on every shard, persisted in the users file
//! as a `$6$` hash with the file's mode kept; CONFIG GET shows the value as Redis does.
//! Replies compared with redis-server 7.0.15.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::shards::shard_of;
use common::{RawClient, Server};

const ARGS: &[&str] = &["--smp", "2", "--max-password-bytes", "64"];

const NO_DEFAULT_PASSWORD: &[u8] = b"-ERR AUTH <password> called without any password configured \
for the default user. Are you sure your configuration is correct?\r\n";
const WRONGPASS: &[u8] = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";
const NOAUTH: &[u8] = b"-NOAUTH Authentication required.\r\n";

fn users_file(server: &Server) -> std::path::PathBuf {
    server.dir.path().join("users")
}

/// New connections until one landed on each of the 2 shards, each checked by `check` (given
/// a fresh connection, before any command) and then asked its shard by `shard_of` (which
/// needs it logged in).
fn on_each_shard(server: &Server, mut check: impl FnMut(&mut RawClient)) {
    let mut seen = [false; 2];
    for _ in 0..200 {
        let mut client = RawClient::connect(server);
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&mut client))).is_err() {
            panic!("server log:\n{}", server.log_lines().join("\n"));
        }
        seen[shard_of(&mut client)] = true;
        if seen.iter().all(|s| *s) {
            return;
        }
    }
    panic!("connections did not land on both shards: {seen:?}");
}

#[test]
fn config_set_requirepass_sets_and_clears_the_default_password_on_every_shard() {
    let server = Server::start(ARGS);
    let path = users_file(&server);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let old = server.password.clone();
    let mut admin = RawClient::authenticated(&server);
    admin.roundtrip(
        &[b"CONFIG", b"GET", b"requirepass"],
        b"*2\r\n$11\r\nrequirepass\r\n$0\r\n\r\n",
    );

    admin.roundtrip(
        &[b"CONFIG", b"SET", b"requirepass", b"new secret"],
        b"+OK\r\n",
    );
    // The connection that changed it stays logged in (as in Redis).
    admin.roundtrip(&[b"PING"], b"+PONG\r\n");
    admin.roundtrip(
        &[b"CONFIG", b"GET", b"requirepass"],
        b"*2\r\n$11\r\nrequirepass\r\n$10\r\nnew secret\r\n",
    );
    let text = std::fs::read_to_string(&path).expect("users file");
    let line = text
        .lines()
        .find(|l| l.starts_with("default:"))
        .expect("default line");
    let hash = shardline_auth::PasswordHash::parse(&line["default:".len()..]).expect("a $6$ hash");
    assert!(
        line.starts_with("default:$6$") && !line.contains("rounds="),
        "{line}"
    );
    assert!(hash.verify(b"new secret"));
    assert_eq!(
        std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777,
        0o640,
        "the users file keeps its mode"
    );
    on_each_shard(&server, |client| {
        client.roundtrip(&[b"PING"], NOAUTH);
        client.roundtrip(&[b"AUTH", old.as_bytes()], WRONGPASS);
        client.roundtrip(&[b"AUTH", b"new secret"], b"+OK\r\n");
    });

    admin.roundtrip(&[b"CONFIG", b"SET", b"requirepass", b""], b"+OK\r\n");
    admin.roundtrip(
        &[b"CONFIG", b"GET", b"requirepass"],
        b"*2\r\n$11\r\nrequirepass\r\n$0\r\n\r\n",
    );
    let text = std::fs::read_to_string(&path).expect("users file");
    assert!(text.lines().any(|l| l == "default:nopass"), "{text}");
    on_each_shard(&server, |client| {
        client.roundtrip(&[b"PING"], b"+PONG\r\n");
        client.roundtrip(&[b"AUTH", b"anything"], NO_DEFAULT_PASSWORD);
        client.roundtrip(&[b"AUTH", b"default", b"anything"], b"+OK\r\n");
        client.roundtrip(&[b"AUTH", b"nosuchuser", b"anything"], WRONGPASS);
        client.roundtrip(&[b"RESET"], b"+RESET\r\n");
        client.roundtrip(&[b"PING"], b"+PONG\r\n");
        let hello = client.request(&[b"HELLO", b"3", b"AUTH", b"default", b"zz"]);
        assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
        client.request(&[b"HELLO", b"2"]);
    });

    // Back to a password: new connections need it again, and so does a RESET one.
    let mut nopass_client = RawClient::connect(&server);
    nopass_client.roundtrip(&[b"PING"], b"+PONG\r\n");
    admin.roundtrip(&[b"CONFIG", b"SET", b"requirepass", b"third"], b"+OK\r\n");
    nopass_client.roundtrip(&[b"PING"], b"+PONG\r\n");
    nopass_client.roundtrip(&[b"RESET"], b"+RESET\r\n");
    nopass_client.roundtrip(&[b"PING"], NOAUTH);
    on_each_shard(&server, |client| {
        client.roundtrip(&[b"PING"], NOAUTH);
        client.roundtrip(&[b"AUTH", b"third"], b"+OK\r\n");
    });

    // Refused values change nothing.
    let long = vec![b'x'; 65];
    admin.roundtrip(
        &[b"CONFIG", b"SET", b"requirepass", &long],
        b"-ERR CONFIG SET failed (possibly related to argument 'requirepass') - the password \
          is 65 bytes; the server refuses passwords longer than 64 bytes \
          (--max-password-bytes)\r\n",
    );
    // All or nothing: a bad value elsewhere leaves the password alone.
    let reply = admin.request(&[
        b"CONFIG",
        b"SET",
        b"requirepass",
        b"fourth",
        b"maxmemory",
        b"lots",
    ]);
    assert!(reply.starts_with(b"-ERR CONFIG SET failed"), "{reply:?}");
    let mut client = RawClient::connect(&server);
    client.roundtrip(&[b"AUTH", b"third"], b"+OK\r\n");
}

#[test]
fn a_nopass_default_user_survives_a_restart() {
    let server = Server::start(&[]);
    let mut admin = RawClient::authenticated(&server);
    admin.roundtrip(&[b"CONFIG", b"SET", b"requirepass", b""], b"+OK\r\n");
    drop(admin);
    let dir = server.kill9();
    let server = Server::restart_in(dir, &[], "");
    let mut client = RawClient::connect(&server);
    client.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    assert!(
        server
            .log_lines()
            .iter()
            .any(|l| l.contains("default:nopass")),
        "a start with a nopass default user warns: {:?}",
        server.log_lines()
    );
}
