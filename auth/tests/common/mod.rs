//! Helpers shared by the glommio-based tests.
#![allow(dead_code)]

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use glommio::LocalExecutorBuilder;
use shardline_auth::{Users, UsersLimits};

/// Runs `f` to completion on a fresh glommio executor with a 500 µs preempt timer and a
/// small io_memory (RLIMIT_MEMLOCK is 8 MiB here).
pub fn run<G, F, T>(f: G) -> T
where
    G: FnOnce() -> F + Send + 'static,
    F: Future<Output = T> + 'static,
    T: Send + 'static,
{
    LocalExecutorBuilder::default()
        .io_memory(64 << 10)
        .preempt_timer(Duration::from_micros(500))
        .spawn(f)
        .expect("executor starts")
        .join()
        .expect("executor joins")
}

/// alice: mkpasswd-pw, bob: openssl-pw, carol: rounds-pw (10000 rounds).
pub fn tool_users() -> Users {
    let text = include_str!("../fixtures/users_tools.txt");
    Users::parse(Path::new("users_tools.txt"), text, &UsersLimits::default())
        .expect("fixture loads")
}

/// Bytes of a fixture hex field (`-` = empty).
pub fn unhex(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("fixture hex"))
        .collect()
}
