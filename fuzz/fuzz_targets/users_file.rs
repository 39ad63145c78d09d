//! Users-file parser (`shardline_auth::Users::parse`).
//!
//! Input: the file's text (non-UTF-8 input is skipped: `Users::load` refuses it before
//! parsing). No hashing happens while parsing. When the file is accepted, every user line
//! must be found again with its hash written back byte for byte, every round count must be
//! within the limit, and the dummy hash must cost what one of the users' hashes costs.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use shardline_auth::{Users, UsersLimits};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = UsersLimits::default();
    let Ok(users) = Users::parse(Path::new("fuzz-users"), text, &limits) else {
        return;
    };
    let mut lines = 0;
    let mut rounds = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        lines += 1;
        let Some((name, hash)) = line.split_once(':') else {
            panic!("accepted a line without ':': {line:?}");
        };
        let Some(stored) = users.get(name.as_bytes()) else {
            panic!("user {name:?} missing");
        };
        assert_eq!(stored.to_string(), hash.trim_end(), "hash of {name:?}");
        assert!(stored.rounds() <= limits.max_hash_rounds);
        rounds.push(stored.rounds());
    }
    assert_eq!(users.len(), lines, "one user per line");
    let dummy = users.dummy_hash().rounds();
    assert!(
        rounds.contains(&dummy) || (rounds.is_empty() && dummy == 5000),
        "dummy hash rounds {dummy} not among {rounds:?}"
    );
});
