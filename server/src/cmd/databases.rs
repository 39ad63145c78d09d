//! Numbered databases on one shard (Redis 7 `db.c`: `selectDb`, `moveCommand`,
//! `swapdbCommand`, `flushallCommand`): each shard keeps one [`Db`] per database, and a
//! command runs on the caller's selected one. The commands that touch several databases
//! (MOVE, SWAPDB, FLUSHALL, COPY … DB) are served here; every other keyspace command goes to
//! [`super::execute`] on the selected database.

use bytes::Bytes;

use super::reply::int_arg;
use crate::keyspace::Db;
use crate::notify::flags;
use crate::resp::Frame;

/// `ERR DB index is out of range` (Redis `selectDb` failing).
pub const OUT_OF_RANGE: &str = "ERR DB index is out of range";

/// Parses a database index as Redis 7 `getIntFromObjectOrReply` does (a C `int`) and checks
/// it against `databases`. `not_int` replaces Redis's default error for a non-integer (SWAPDB
/// passes `ERR invalid first DB index`).
///
/// Errors: `ERR value is not an integer or out of range` (or `not_int`), Redis's
/// `ERR value is out of range, value must between …` outside a C `int`,
/// `ERR DB index is out of range` outside `0..databases`.
pub fn db_index(arg: &[u8], databases: usize, not_int: Option<&str>) -> Result<usize, Frame> {
    let n = match (int_arg(arg), not_int) {
        (Ok(n), _) => n,
        (Err(_), Some(message)) => return Err(Frame::error(message)),
        (Err(err), None) => return Err(err),
    };
    let (min, max) = (i64::from(i32::MIN), i64::from(i32::MAX));
    if !(min..=max).contains(&n) {
        return Err(Frame::error(not_int.map_or_else(
            || format!("ERR value is out of range, value must between {min} and {max}"),
            str::to_string,
        )));
    }
    usize::try_from(n)
        .ok()
        .filter(|&i| i < databases)
        .ok_or_else(|| Frame::error(OUT_OF_RANGE))
}

/// Executes one keyspace command on this shard's databases `dbs`, with database `selected`
/// as the caller's, at `now_ms` (unix ms). `selected` must be an index of `dbs`.
pub fn execute_in(dbs: &mut [Db], selected: usize, args: &[Bytes], now_ms: u64) -> Frame {
    // No allocation and no table lookup on the way to the common case.
    let is = |word: &[u8]| args.first().is_some_and(|n| n.eq_ignore_ascii_case(word));
    if args.len() == 3 && is(b"move") {
        move_key(dbs, selected, &args[1], &args[2], now_ms)
    } else if args.len() >= 3 && is(b"copy") {
        super::rename::copy(dbs, selected, args, now_ms)
    } else if args.len() == 3 && is(b"swapdb") {
        swapdb(dbs, &args[1], &args[2], now_ms)
    } else if is(b"flushall") {
        let reply = super::execute(&mut dbs[selected], args, now_ms);
        if !reply.is_error() {
            dbs.iter_mut().for_each(|db| db.flush(now_ms));
        }
        reply
    } else {
        super::execute(&mut dbs[selected], args, now_ms)
    }
}

/// `MOVE key db` → `:1` when moved (with its deadline), `:0` when the key is missing here or
/// exists in `db`; `ERR source and destination objects are the same` for the selected db.
fn move_key(dbs: &mut [Db], selected: usize, key: &[u8], target: &[u8], now_ms: u64) -> Frame {
    let target = match db_index(target, dbs.len(), None) {
        Ok(target) => target,
        Err(err) => return err,
    };
    if target == selected {
        return Frame::error("ERR source and destination objects are the same");
    }
    let Some(deadline) = dbs[selected].deadline(key, now_ms) else {
        return Frame::Integer(0);
    };
    if dbs[target].contains(key, now_ms) {
        return Frame::Integer(0);
    }
    let Some(value) = dbs[selected].remove(key, now_ms) else {
        return Frame::Integer(0);
    };
    let dst = &mut dbs[target];
    dst.set(key, value, false, now_ms);
    if let Some(at) = deadline {
        dst.set_deadline(key, at);
    }
    dbs[selected].notify(flags::GENERIC, "move_from", key);
    dbs[target].notify(flags::GENERIC, "move_to", key);
    Frame::Integer(1)
}

/// `SWAPDB index1 index2` → OK; the two databases trade their keys (and any dump in progress
/// with them: see [`crate::keyspace::snapshot`]).
fn swapdb(dbs: &mut [Db], first: &[u8], second: &[u8], now_ms: u64) -> Frame {
    let n = dbs.len();
    let first = match db_index(first, n, Some("ERR invalid first DB index")) {
        Ok(i) => i,
        Err(err) => return err,
    };
    let second = match db_index(second, n, Some("ERR invalid second DB index")) {
        Ok(i) => i,
        Err(err) => return err,
    };
    if first != second {
        dbs.swap(first, second);
        let (low, high) = dbs.split_at_mut(first.max(second));
        low[first.min(second)].swap_watches_back(&mut high[0], now_ms);
    }
    Frame::ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dbs: &mut [Db], selected: usize, args: &[&str]) -> Frame {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
        execute_in(dbs, selected, &args, 1_000)
    }

    fn dbs(n: usize) -> Vec<Db> {
        (0..n).map(|_| Db::new()).collect()
    }

    #[test]
    fn databases_are_separate_keyspaces() {
        let mut dbs = dbs(16);
        assert_eq!(run(&mut dbs, 0, &["SET", "k", "zero"]), Frame::ok());
        assert_eq!(run(&mut dbs, 5, &["SET", "k", "five"]), Frame::ok());
        assert_eq!(run(&mut dbs, 0, &["GET", "k"]), Frame::bulk(b"zero"));
        assert_eq!(run(&mut dbs, 5, &["GET", "k"]), Frame::bulk(b"five"));
        assert_eq!(run(&mut dbs, 5, &["FLUSHDB"]), Frame::ok());
        assert_eq!(run(&mut dbs, 0, &["DBSIZE"]), Frame::Integer(1));
        assert_eq!(run(&mut dbs, 5, &["DBSIZE"]), Frame::Integer(0));
        run(&mut dbs, 9, &["SET", "x", "1"]);
        assert_eq!(run(&mut dbs, 3, &["FLUSHALL"]), Frame::ok());
        assert!(dbs.iter().all(Db::is_empty));
    }

    #[test]
    fn move_keeps_the_deadline_and_refuses_what_redis_refuses() {
        let mut dbs = dbs(4);
        run(&mut dbs, 0, &["SET", "k", "v", "PXAT", "5000000"]);
        assert_eq!(
            run(&mut dbs, 0, &["MOVE", "k", "0"]),
            Frame::error("ERR source and destination objects are the same")
        );
        assert_eq!(
            run(&mut dbs, 0, &["MOVE", "k", "4"]),
            Frame::error(OUT_OF_RANGE)
        );
        assert_eq!(
            run(&mut dbs, 0, &["MOVE", "k", "x"]),
            Frame::error("ERR value is not an integer or out of range")
        );
        assert_eq!(run(&mut dbs, 0, &["MOVE", "k", "2"]), Frame::Integer(1));
        assert_eq!(run(&mut dbs, 0, &["EXISTS", "k"]), Frame::Integer(0));
        assert_eq!(
            run(&mut dbs, 2, &["PEXPIRETIME", "k"]),
            Frame::Integer(5_000_000)
        );
        assert_eq!(run(&mut dbs, 0, &["MOVE", "k", "2"]), Frame::Integer(0));
        run(&mut dbs, 0, &["SET", "k", "other"]);
        assert_eq!(run(&mut dbs, 0, &["MOVE", "k", "2"]), Frame::Integer(0));
        assert_eq!(run(&mut dbs, 0, &["GET", "k"]), Frame::bulk(b"other"));
    }

    #[test]
    fn swapdb_swaps_and_checks_its_arguments() {
        let mut dbs = dbs(3);
        run(&mut dbs, 0, &["SET", "a", "0"]);
        run(&mut dbs, 2, &["SET", "b", "2"]);
        assert_eq!(run(&mut dbs, 1, &["SWAPDB", "0", "2"]), Frame::ok());
        assert_eq!(run(&mut dbs, 0, &["GET", "b"]), Frame::bulk(b"2"));
        assert_eq!(run(&mut dbs, 2, &["GET", "a"]), Frame::bulk(b"0"));
        assert_eq!(
            run(&mut dbs, 0, &["SWAPDB", "x", "1"]),
            Frame::error("ERR invalid first DB index")
        );
        assert_eq!(
            run(&mut dbs, 0, &["SWAPDB", "1", "y"]),
            Frame::error("ERR invalid second DB index")
        );
        assert_eq!(
            run(&mut dbs, 0, &["SWAPDB", "1", "3"]),
            Frame::error(OUT_OF_RANGE)
        );
        assert_eq!(run(&mut dbs, 0, &["SWAPDB", "1", "1"]), Frame::ok());
    }
}
