//! `--hash-batch`: verifications queued on a shard (inline, yield) or on the offload pool
//! share a multi-buffer batch; a lone one runs alone; results equal the one-at-a-time path.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use futures_lite::future;
use shardline_auth::sha512_lanes::Kernel;
use shardline_auth::{
    HashBatch, HashMode, OffloadPool, Users, Verified, Verifier, VerifierConfig,
    VerifierConfigError,
};

/// The kernel batches run on here, and the batch size it gives `n` same-rounds logins.
fn kernel() -> Kernel {
    Kernel::detect()
}

fn batch_of(n: usize) -> usize {
    n.min(kernel().lanes())
}

fn batching_verifier(mode: HashMode) -> Verifier {
    Verifier::new(VerifierConfig {
        mode,
        batch_kernel: Some(kernel()),
        ..VerifierConfig::default()
    })
    .expect("config ok")
}

/// (user, password, accepted, user known): alice, bob and the dummy hash have 5000 rounds,
/// carol 10000.
const LOGINS: [(&[u8], &[u8], bool, bool); 7] = [
    (b"alice", b"mkpasswd-pw", true, true),
    (b"bob", b"openssl-pw", true, true),
    (b"carol", b"rounds-pw", true, true),
    (b"mallory", b"openssl-pw", false, false),
    (b"bob", b"mkpasswd-pw", false, true),
    (b"alice", b"", false, true),
    (b"nobody", b"x", false, false),
];

/// Submits every login before awaiting any, then awaits them all concurrently.
async fn submit_all_then_wait(v: &Verifier, users: &Users) -> Vec<Verified> {
    let submitted: Vec<_> = LOGINS
        .iter()
        .map(|(u, p, _, _)| v.submit(users, u, p).expect("submits"))
        .collect();
    let tasks: Vec<_> = submitted
        .into_iter()
        .map(|s| glommio::spawn_local(s.wait()))
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("verifies"));
    }
    out
}

#[test]
fn hash_batch_flag_values() {
    assert_eq!("auto".parse::<HashBatch>(), Ok(HashBatch::Auto));
    assert_eq!("off".parse::<HashBatch>(), Ok(HashBatch::Off));
    assert!("on".parse::<HashBatch>().is_err());
    assert_eq!(HashBatch::Off.kernel(), None);
    let auto = HashBatch::Auto.kernel();
    assert_eq!(auto, Some(Kernel::detect()).filter(|k| k.lanes() > 1));
    for k in Kernel::ALL.into_iter().filter(|k| !k.is_available()) {
        let refused = Verifier::new(VerifierConfig {
            batch_kernel: Some(k),
            ..VerifierConfig::default()
        });
        assert_eq!(
            refused.map(|_| ()),
            Err(VerifierConfigError::KernelUnavailable(k.as_str()))
        );
    }
}

#[test]
fn queued_logins_share_a_batch_per_round_count_in_inline_and_yield_modes() {
    common::run(|| async {
        let users = common::tool_users();
        for mode in [HashMode::Inline, HashMode::Yield] {
            let v = batching_verifier(mode);
            assert_eq!(v.batch_kernel(), Some(kernel()));
            let got = submit_all_then_wait(&v, &users).await;
            // Six logins of 5000 rounds (the dummy included) share one batch (or as many as
            // the lanes allow); carol's 10000 rounds run alone: no lane waits on larger rounds.
            for (r, (user, _, accepted, known)) in got.iter().zip(LOGINS) {
                let who = String::from_utf8_lossy(user);
                assert_eq!(
                    (r.accepted, r.user_known),
                    (accepted, known),
                    "{mode} {who}"
                );
                assert_eq!(r.mode, mode);
                let want = if user == b"carol" { 1 } else { batch_of(6) };
                if kernel().lanes() >= 6 || user == b"carol" {
                    assert_eq!(r.batch_size, want, "{mode} {who}");
                } else {
                    assert!((1..=kernel().lanes()).contains(&r.batch_size), "{r:?}");
                }
            }
        }
    });
}

#[test]
fn a_lone_login_runs_at_once_and_alone() {
    common::run(|| async {
        let users = common::tool_users();
        for mode in [HashMode::Inline, HashMode::Yield] {
            let v = batching_verifier(mode);
            let r = v
                .verify(&users, b"alice", b"mkpasswd-pw")
                .await
                .expect("verifies");
            assert!(r.accepted);
            assert_eq!(r.batch_size, 1, "{mode}");
        }
    });
}

#[test]
fn logins_queued_while_a_batch_runs_form_the_next_batch() {
    common::run(|| async {
        let users = common::tool_users();
        let v = batching_verifier(HashMode::Yield);
        let first = v.submit(&users, b"carol", b"rounds-pw").expect("submits");
        let running = glommio::spawn_local(first.wait());
        // Let the first batch start (it yields between rounds), then queue three more.
        glommio::timer::sleep(Duration::from_micros(300)).await;
        let later: Vec<_> = [b"alice".as_slice(), b"bob", b"alice"]
            .iter()
            .map(|u| v.submit(&users, u, b"mkpasswd-pw").expect("submits"))
            .collect();
        let later: Vec<_> = later
            .into_iter()
            .map(|s| glommio::spawn_local(s.wait()))
            .collect();
        let first = running.await.expect("verifies");
        assert_eq!(first.batch_size, 1, "carol started alone");
        assert!(first.accepted);
        let mut accepted = Vec::new();
        for t in later {
            let r = t.await.expect("verifies");
            assert_eq!(r.batch_size, batch_of(3));
            accepted.push(r.accepted);
        }
        assert_eq!(accepted, [true, false, true]);
    });
}

#[test]
fn a_dropped_batch_runner_hands_its_batch_on() {
    common::run(|| async {
        let users = common::tool_users();
        let v = batching_verifier(HashMode::Yield);
        let leader = v.submit(&users, b"carol", b"rounds-pw").expect("submits");
        let mates: Vec<_> = (0..3)
            .map(|_| v.submit(&users, b"carol", b"rounds-pw").expect("submits"))
            .collect();
        // The leader's wait is polled first, so it runs the batch; the mates start waiting in
        // their own tasks after that, and the leader is dropped 200 µs later, long before
        // carol's 10000 rounds are done.
        let dropped = future::or(async { Ok(leader.wait().await) }, async {
            let mates: Vec<_> = mates
                .into_iter()
                .map(|s| glommio::spawn_local(s.wait()))
                .collect();
            glommio::timer::sleep(Duration::from_micros(200)).await;
            Err(mates)
        })
        .await;
        let Err(mates) = dropped else {
            panic!("the leader finished its batch in 200 µs")
        };
        for t in mates {
            let r = t.await.expect("verifies");
            assert!(r.accepted);
            // The leader's verification was withdrawn: the mates ran again without it.
            assert_eq!(r.batch_size, batch_of(3), "{r:?}");
        }
    });
}

#[test]
fn offload_threads_take_the_waiting_verifications_as_one_batch() {
    let pool = OffloadPool::with_batching(1, 64, Some(kernel())).expect("pool");
    assert_eq!(pool.batch_kernel(), Some(kernel()));
    // Hold the only hashing thread until every verification is queued.
    let (release, hold) = mpsc::channel::<()>();
    let blocker = pool
        .submit(move || hold.recv_timeout(Duration::from_secs(30)).is_ok())
        .expect("queued");
    let p = pool.clone();
    let results = common::run(move || async move {
        let users = common::tool_users();
        let v = Verifier::new(VerifierConfig {
            mode: HashMode::Offload,
            offload: Some(p),
            ..VerifierConfig::default()
        })
        .expect("config ok");
        let submitted: Vec<_> = LOGINS
            .iter()
            .map(|(u, pw, _, _)| v.submit(&users, u, pw).expect("queued"))
            .collect();
        release.send(()).expect("blocker waits");
        let mut out = Vec::new();
        for s in submitted {
            out.push(s.wait().await.expect("verifies"));
        }
        out
    });
    assert!(future::block_on(blocker).expect("blocker ran"));
    for (r, (user, _, accepted, known)) in results.iter().zip(LOGINS) {
        assert_eq!((r.accepted, r.user_known), (accepted, known), "{r:?}");
        assert_eq!(r.mode, HashMode::Offload);
        if kernel().lanes() >= 7 {
            // One batch of the seven taken; within it, one per round count.
            let want = if user == b"carol" { 1 } else { 6 };
            assert_eq!(r.batch_size, want, "{r:?}");
        }
    }
}

#[test]
fn offload_without_batching_hashes_one_at_a_time() {
    let pool = OffloadPool::new(1, 64).expect("pool");
    assert_eq!(pool.batch_kernel(), None);
    let results = common::run(move || async move {
        let users = common::tool_users();
        let v = Verifier::new(VerifierConfig {
            mode: HashMode::Offload,
            offload: Some(pool),
            ..VerifierConfig::default()
        })
        .expect("config ok");
        submit_all_then_wait(&v, &users).await
    });
    for (r, (_, _, accepted, known)) in results.iter().zip(LOGINS) {
        assert_eq!(
            (r.accepted, r.user_known, r.batch_size),
            (accepted, known, 1)
        );
    }
}
