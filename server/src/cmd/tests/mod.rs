//! Command tests: exact RESP bytes for every command.

mod bitmaps;
mod bits;
mod expire;
mod float;
mod generic;
mod hash;
mod hash_more;
mod hash_random;
mod keyspace_ops;
mod list;
mod list_edit;
mod list_moves;
mod notify;
mod set_algebra;
mod sets;
mod string_range;
mod strings;
mod zset;

use bytes::Bytes;

use super::execute;
use crate::keyspace::Db;
use crate::resp::{Frame, Protocol};

/// Runs `args` at `now` and returns the RESP2 encoding as text.
fn run_at(db: &mut Db, now: u64, args: &[&[u8]]) -> String {
    encode(&exec(db, now, args), Protocol::Resp2)
}

fn exec(db: &mut Db, now: u64, args: &[&[u8]]) -> Frame {
    let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
    execute(db, &args, now)
}

fn encode(f: &Frame, p: Protocol) -> String {
    String::from_utf8_lossy(&f.to_bytes(p)).into_owned()
}

/// Space-separated command at time 0, RESP2.
fn r(db: &mut Db, line: &str) -> String {
    rt(db, 0, line)
}

/// Space-separated command at `now`, RESP2.
fn rt(db: &mut Db, now: u64, line: &str) -> String {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    run_at(db, now, &args)
}

/// Space-separated command at time 0, RESP3.
fn r3(db: &mut Db, line: &str) -> String {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    encode(&exec(db, 0, &args), Protocol::Resp3)
}

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";

#[test]
fn dispatch_errors() {
    let mut db = Db::new();
    assert_eq!(
        r(&mut db, "GET"),
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(
        r(&mut db, "get a b"),
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(
        r(&mut db, "FOO bar"),
        "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n"
    );
    assert_eq!(run_at(&mut db, 0, &[]), "-ERR empty command\r\n");
    assert_eq!(
        r(&mut db, "PING"),
        "-ERR 'ping' is not a keyspace command\r\n"
    );
    assert_eq!(r(&mut db, "gEt missing"), "$-1\r\n");
}

/// Every table command with every argument count up to 6 never panics.
#[test]
fn never_panics() {
    let mut db = Db::new();
    let words: [&[u8]; 6] = [b"k", b"1", b"-1", b"x", b"ex", b"count"];
    for spec in super::all() {
        for argc in 0..6 {
            for w in words {
                let mut args: Vec<&[u8]> = vec![spec.name.as_bytes()];
                args.extend(std::iter::repeat_n(w, argc));
                let _ = exec(&mut db, 5, &args);
            }
        }
    }
}
