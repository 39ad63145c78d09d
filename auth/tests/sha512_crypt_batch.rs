//! Batched SHA-512-crypt (`Sha512CryptBatch`) against libxcrypt's answers and the scalar
//! computation, on every kernel this CPU runs and every batch size from 1 to 8.

mod common;

use std::collections::BTreeMap;

use shardline_auth::sha512_crypt::{PasswordHash, Sha512CryptBatch, Sha512CryptState};
use shardline_auth::sha512_lanes::{Kernel, MAX_LANES};
use shardline_auth::{Users, UsersLimits};

/// The fixture lines libxcrypt hashed: (bytes crypt saw, its answer).
fn fixture() -> Vec<(Vec<u8>, String)> {
    include_str!("fixtures/libxcrypt_sha512.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            f[3].starts_with("$6$")
                .then(|| (common::unhex(f[1]), f[3].to_string()))
        })
        .collect()
}

fn kernels() -> Vec<Kernel> {
    let found: Vec<Kernel> = Kernel::ALL
        .into_iter()
        .filter(|k| k.is_available())
        .collect();
    eprintln!("kernels on this CPU: {found:?}");
    found
}

/// Hashes `jobs` (password, stored hash) as one batch and returns the answers as text.
/// A fixture entry: the password bytes, the parsed hash, libxcrypt's answer as text.
type Entry = (Vec<u8>, PasswordHash, String);

fn batch_answers(kernel: Kernel, jobs: &[(&[u8], &PasswordHash)]) -> Vec<String> {
    let rounds = jobs[0].1.rounds();
    let inputs: Vec<(&[u8], &[u8])> = jobs
        .iter()
        .map(|(pw, h)| (*pw, h.setting().salt().as_bytes()))
        .collect();
    let batch = Sha512CryptBatch::new(kernel, &inputs, rounds);
    assert_eq!(batch.len(), jobs.len());
    batch
        .finish()
        .into_iter()
        .zip(jobs)
        .map(|(digest, (_, h))| PasswordHash::new(h.setting().clone(), digest).to_string())
        .collect()
}

#[test]
fn whole_libxcrypt_fixture_in_batches_of_every_size_on_every_kernel() {
    let entries = fixture();
    assert!(entries.len() >= 200, "{} entries", entries.len());
    let parsed: Vec<Entry> = entries
        .into_iter()
        .map(|(pw, text)| {
            let h = PasswordHash::parse(&text).expect("fixture hash parses");
            (pw, h, text)
        })
        .collect();
    // Batches hold one round count (the scheduler groups by rounds).
    let mut by_rounds: BTreeMap<u32, Vec<&Entry>> = BTreeMap::new();
    for e in &parsed {
        by_rounds.entry(e.1.rounds()).or_default().push(e);
    }
    for kernel in kernels() {
        for size in 1..=MAX_LANES {
            let mut checked = 0;
            for group in by_rounds.values() {
                for chunk in group.chunks(size) {
                    let jobs: Vec<(&[u8], &PasswordHash)> =
                        chunk.iter().map(|e| (e.0.as_slice(), &e.1)).collect();
                    let got = batch_answers(kernel, &jobs);
                    for (answer, e) in got.iter().zip(chunk) {
                        assert_eq!(answer, &e.2, "{kernel:?}, batch size {size}");
                    }
                    checked += chunk.len();
                }
            }
            assert_eq!(checked, parsed.len());
        }
    }
}

#[test]
fn lanes_of_one_two_and_more_blocks_and_every_hole_alignment_in_one_batch() {
    // Message of round layout "C P S P": 64 + 2·len(P) + len(S) bytes, + 17 of padding:
    // one block up to 2·len(P) + len(S) = 47, two above, five for 200-byte passwords. The
    // hole for C starts at len(P) (+ len(S)) (+ len(P)) in odd rounds: every residue mod 8.
    let passwords: Vec<Vec<u8>> = (0..24usize)
        .map(|n| {
            let len = match n {
                0..=16 => n,
                17 => 31,
                18 => 40,
                19 => 63,
                20 => 64,
                21 => 65,
                22 => 127,
                _ => 200,
            };
            (0..len).map(|i| (i * 7 + n) as u8).collect()
        })
        .collect();
    let salts: [&[u8]; 5] = [b"", b"s", b"saltsal", b"saltsalt1", b"0123456789abcdefXYZ"];
    let jobs: Vec<(Vec<u8>, &[u8])> = passwords
        .iter()
        .enumerate()
        .map(|(i, pw)| (pw.clone(), salts[i % salts.len()]))
        .collect();
    let expected: Vec<[u8; 64]> = jobs
        .iter()
        .map(|(pw, salt)| *Sha512CryptState::new(pw, salt, 1000).finish().as_bytes())
        .collect();
    for kernel in kernels() {
        for size in [2, 3, 5, 8] {
            for (chunk, want) in jobs.chunks(size).zip(expected.chunks(size)) {
                let inputs: Vec<(&[u8], &[u8])> =
                    chunk.iter().map(|(p, s)| (p.as_slice(), *s)).collect();
                let got = Sha512CryptBatch::new(kernel, &inputs, 1000).finish();
                for ((g, w), (p, s)) in got.iter().zip(want).zip(chunk) {
                    assert_eq!(
                        g.as_bytes(),
                        w,
                        "{kernel:?} size {size}: password of {} bytes, salt of {}",
                        p.len(),
                        s.len()
                    );
                }
            }
        }
    }
}

#[test]
fn resumable_in_any_step_size() {
    let jobs: [(&[u8], &[u8]); 3] = [
        (b"Hello world!", b"saltstring"),
        (b"", b"x"),
        (b"a much longer password of many words", b"0123456789abcdef"),
    ];
    for kernel in kernels() {
        let whole = Sha512CryptBatch::new(kernel, &jobs, 1234).finish();
        for step in [1u32, 7, 1233, 1234, 5000] {
            let mut batch = Sha512CryptBatch::new(kernel, &jobs, 1234);
            let mut calls = 1;
            while !batch.run_rounds(step) {
                calls += 1;
            }
            assert_eq!(calls, 1234u32.div_ceil(step), "step {step}");
            assert_eq!(batch.remaining(), 0);
            let got = batch.finish();
            for (g, w) in got.iter().zip(&whole) {
                assert!(g.ct_eq(w), "{kernel:?} step {step}");
            }
        }
    }
}

#[test]
fn dummy_hash_for_unknown_users_batches_with_real_users() {
    let users = Users::parse(
        std::path::Path::new("users"),
        include_str!("fixtures/users_tools.txt"),
        &UsersLimits::default(),
    )
    .expect("fixture loads");
    let alice = users.get(b"alice").expect("alice");
    let dummy = users.dummy_hash();
    assert_eq!(
        dummy.rounds(),
        alice.rounds(),
        "the dummy costs what alice costs"
    );
    let jobs: [(&[u8], &PasswordHash); 3] = [
        (b"mkpasswd-pw", alice),
        (b"guess", dummy),
        (b"another guess", dummy),
    ];
    for kernel in kernels() {
        let answers = batch_answers(kernel, &jobs);
        assert_eq!(answers[0], alice.to_string(), "alice's password verifies");
        for ((pw, h), answer) in jobs.iter().zip(&answers).skip(1) {
            let scalar = PasswordHash::new(h.setting().clone(), h.start(pw).finish());
            assert_eq!(answer, &scalar.to_string(), "{kernel:?}");
        }
    }
}

#[test]
#[should_panic(expected = "a batch holds 1 to 8 computations, not 9")]
fn more_jobs_than_lanes_is_refused() {
    let jobs = [(b"pw".as_slice(), b"salt".as_slice()); 9];
    let _ = Sha512CryptBatch::new(Kernel::Scalar, &jobs, 1000);
}
