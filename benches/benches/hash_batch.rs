//! Throughput of 5000-round SHA-512-crypt in hashes per second on one core (issue 15): the
//! one-at-a-time scalar path (`Sha512CryptState`), libxcrypt's `crypt_r` (FFI), and the
//! multi-buffer `Sha512CryptBatch` on every kernel this CPU has (scalar, AVX2, AVX-512F) at
//! batch sizes 1, 2, 4 and 8. Every group reports `Throughput::Elements(hashes per
//! iteration)`, so criterion prints hashes/s ("elem/s").
//!
//! Inputs: eight different passwords of 12 to 20 bytes, each with its own 16-character salt.
//! Before any timing, every batch's digests are checked against the scalar path's, and the
//! scalar path's against libxcrypt's, so the bench measures correct code.
//!
//! Run pinned to one CPU:
//! `taskset -c 1 cargo bench -p shardline-benches --bench hash_batch -- --measurement-time 3 --warm-up-time 1`

use std::ffi::CString;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shardline_auth::sha512_crypt::{CryptDigest, PasswordHash, Sha512CryptBatch, Sha512CryptState};
use shardline_auth::sha512_lanes::Kernel;

#[path = "common/xcrypt.rs"]
mod xcrypt;
use xcrypt::CryptData;

const ROUNDS: u32 = 5000;

/// Eight (password, salt) pairs: passwords of 12 to 20 bytes, 16-character salts, all
/// different.
const JOBS: [(&str, &str); 8] = [
    ("correct horse", "Qx7bN2rLm9TzWc4e"),
    ("Tr0ub4dor&3xyz", "a8JkP0sVh3YdRf6u"),
    ("s3cret-login-42!", "Zq1oLx5NbE7tGy2m"),
    ("hunter2hunter2hun", "pW4cV9kTn6RjHs0a"),
    ("benchmark password", "mK2dF8gJ1lQ5wX3z"),
    ("opensesame-2026-d", "Yb6hU0iO4pE9rT7v"),
    ("letmein.please.now", "cN3vB8mA1sD6fG5h"),
    ("n0t-a-real-passw0rd", "Lk9jH4gF2dS7aP0o"),
];

fn scalar(password: &str, salt: &str) -> CryptDigest {
    Sha512CryptState::new(password.as_bytes(), salt.as_bytes(), ROUNDS).finish()
}

fn batch(kernel: Kernel, jobs: &[(&[u8], &[u8])]) -> Vec<CryptDigest> {
    Sha512CryptBatch::new(kernel, jobs, ROUNDS).finish()
}

fn hash_batch(c: &mut Criterion) {
    let jobs: Vec<(&[u8], &[u8])> = JOBS
        .iter()
        .map(|(p, s)| (p.as_bytes(), s.as_bytes()))
        .collect();
    let phrases: Vec<CString> = JOBS
        .iter()
        .map(|(p, _)| CString::new(*p).expect("no NUL"))
        .collect();
    let settings: Vec<CString> = JOBS
        .iter()
        .map(|(_, s)| CString::new(format!("$6${s}$")).expect("no NUL"))
        .collect();

    // Correctness, once, outside every timed loop: scalar = libxcrypt, batch = scalar.
    let mut data = CryptData::new();
    let expected: Vec<CryptDigest> = JOBS.iter().map(|(p, s)| scalar(p, s)).collect();
    for (i, want) in expected.iter().enumerate() {
        let text = data
            .crypt(&phrases[i], &settings[i])
            .expect("libxcrypt hashes");
        let theirs = PasswordHash::parse(&text).expect("libxcrypt's hash parses");
        assert_eq!(
            theirs.digest().as_bytes(),
            want.as_bytes(),
            "scalar vs libxcrypt, job {i}"
        );
    }
    let kernels: Vec<Kernel> = [Kernel::Avx512, Kernel::Avx2, Kernel::Scalar]
        .into_iter()
        .filter(|k| k.is_available())
        .collect();
    for &kernel in &kernels {
        for n in [1, 2, 4, 8] {
            let got = batch(kernel, &jobs[..n]);
            assert_eq!(got.len(), n);
            for (lane, (g, w)) in got.iter().zip(&expected).enumerate() {
                assert_eq!(
                    g.as_bytes(),
                    w.as_bytes(),
                    "{} batch of {n}, lane {lane} vs scalar",
                    kernel.as_str()
                );
            }
        }
    }

    let mut g = c.benchmark_group("sha512crypt_5000");
    g.throughput(Throughput::Elements(1));
    let mut next = 0usize;
    g.bench_function("scalar_one_at_a_time", |b| {
        b.iter(|| {
            let (p, s) = JOBS[next % JOBS.len()];
            next += 1;
            scalar(black_box(p), black_box(s))
        })
    });
    let mut next = 0usize;
    g.bench_function("libxcrypt_crypt_r", |b| {
        b.iter(|| {
            let i = next % JOBS.len();
            next += 1;
            data.crypt(black_box(&phrases[i]), black_box(&settings[i]))
        })
    });
    for &kernel in &kernels {
        for n in [1usize, 2, 4, 8] {
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(format!("batch_{}_x{n}", kernel.as_str()), |b| {
                b.iter(|| batch(black_box(kernel), black_box(&jobs[..n])))
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = hash_batch
}
criterion_main!(benches);
