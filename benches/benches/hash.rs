//! Verify time of one 5000-round SHA-512-crypt hash: shardline's implementation vs
//! libxcrypt's `crypt_r` (FFI) vs RustCrypto's `sha-crypt`, and shardline's yield mode vs
//! inline inside a glommio executor with a 500 µs preempt timer.
//!
//! Run: `cargo bench -p shardline-benches --bench hash -- --measurement-time 5`

use std::cell::Cell;
use std::ffi::CString;
use std::hint::black_box;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use glommio::LocalExecutorBuilder;
use shardline_auth::{HashMode, PasswordHash, Users, UsersLimits, Verifier, VerifierConfig};

/// `$6$` hash of "benchmark password" (5000 rounds), made by libxcrypt.
const HASH: &str = "$6$benchsalt1234567$";
const PASSWORD: &str = "benchmark password";

#[path = "common/xcrypt.rs"]
mod xcrypt;
use xcrypt::CryptData;

fn hash_verify(c: &mut Criterion) {
    let phrase = CString::new(PASSWORD).expect("no NUL");
    let mut data = CryptData::new();
    let stored = data
        .crypt(&phrase, &CString::new(HASH).expect("no NUL"))
        .expect("libxcrypt hashes");
    let stored_c = CString::new(stored.clone()).expect("no NUL");
    let ours = PasswordHash::parse(&stored).expect("parses");
    assert!(ours.verify(PASSWORD.as_bytes()));
    assert!(sha_crypt::sha512_check(PASSWORD, &stored).is_ok());

    let mut g = c.benchmark_group("verify_sha512crypt_5000");
    g.bench_function("shardline", |b| {
        b.iter(|| assert!(black_box(&ours).verify(black_box(PASSWORD.as_bytes()))))
    });
    g.bench_function("libxcrypt_crypt_r", |b| {
        b.iter(|| {
            assert_eq!(
                data.crypt(black_box(&phrase), black_box(&stored_c))
                    .as_deref(),
                Some(stored.as_str())
            )
        })
    });
    g.bench_function("rustcrypto_sha_crypt", |b| {
        b.iter(|| assert!(sha_crypt::sha512_check(black_box(PASSWORD), black_box(&stored)).is_ok()))
    });
    g.finish();

    // Yield vs inline, both driven by Verifier::verify inside a glommio executor. Each
    // measurement gets a fresh executor thread (created outside the timed part), so the
    // executor never sits idle with an expired preempt timer between samples.
    let mut g = c.benchmark_group("verify_in_glommio_5000");
    for (name, mode, every) in [
        ("inline", HashMode::Inline, 1),
        ("yield_every_1", HashMode::Yield, 1),
        ("yield_every_4", HashMode::Yield, 4),
        ("yield_every_16", HashMode::Yield, 16),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| verify_in_glommio(&stored, mode, every, iters))
        });
    }
    g.finish();
}

/// Runs `iters` verifications of `stored` in `mode` on a fresh glommio executor with a
/// 500 µs preempt timer and returns the time they took.
fn verify_in_glommio(stored: &str, mode: HashMode, every: u32, iters: u64) -> Duration {
    let users_text = format!("bench:{stored}\n");
    LocalExecutorBuilder::default()
        .io_memory(64 << 10)
        .preempt_timer(Duration::from_micros(500))
        .spawn(move || async move {
            let users = Users::parse(Path::new("bench"), &users_text, &UsersLimits::default())
                .expect("users");
            let config = VerifierConfig {
                mode,
                yield_every_rounds: every,
                ..VerifierConfig::default()
            };
            let verifier = Verifier::new(config).expect("config");
            // glommio 0.9 was seen to park an executor whose only task had just yielded on
            // an expired preempt timer, until some other event arrived. A server always has
            // other events; here a 200 µs ticker provides them, in every mode alike.
            let stop = Rc::new(Cell::new(false));
            let ticker_stop = stop.clone();
            let ticker = glommio::spawn_local(async move {
                while !ticker_stop.get() {
                    glommio::timer::sleep(Duration::from_micros(200)).await;
                }
            });
            let start = Instant::now();
            for _ in 0..iters {
                let v = verifier
                    .verify(&users, b"bench", PASSWORD.as_bytes())
                    .await
                    .expect("verifies");
                assert!(v.accepted);
            }
            let elapsed = start.elapsed();
            stop.set(true);
            ticker.await;
            elapsed
        })
        .expect("executor")
        .join()
        .expect("executor thread")
}

criterion_group!(benches, hash_verify);
criterion_main!(benches);
