//! The three hashing strategies, each inside a real glommio executor.

mod common;

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use shardline_auth::sha512_crypt::{HashSetting, PasswordHash};
use shardline_auth::{
    AuthError, CacheConfig, HashMode, OffloadError, OffloadPool, Users, UsersLimits, Verifier,
    VerifierConfig, VerifierConfigError,
};

fn verifier(mode: HashMode, pool: Option<OffloadPool>) -> Verifier {
    Verifier::new(VerifierConfig {
        mode,
        offload: pool,
        ..VerifierConfig::default()
    })
    .expect("config ok")
}

#[test]
fn mode_names_round_trip() {
    for m in [HashMode::Inline, HashMode::Yield, HashMode::Offload] {
        assert_eq!(m.to_string().parse::<HashMode>(), Ok(m));
    }
    assert_eq!("yield".parse::<HashMode>(), Ok(HashMode::Yield));
    assert!("Inline".parse::<HashMode>().is_err());
    assert_eq!(VerifierConfig::default().mode, HashMode::Yield);
    let no_pool = Verifier::new(VerifierConfig {
        mode: HashMode::Offload,
        ..VerifierConfig::default()
    });
    assert_eq!(
        no_pool.map(|_| ()),
        Err(VerifierConfigError::MissingOffloadPool)
    );
}

#[test]
fn every_mode_accepts_rejects_and_hashes_unknown_users() {
    let pool = OffloadPool::new(1, 4).expect("pool");
    common::run(move || async move {
        let users = common::tool_users();
        for mode in [HashMode::Inline, HashMode::Yield, HashMode::Offload] {
            let v = verifier(mode, Some(pool.clone()));
            let ok = v
                .verify(&users, b"alice", b"mkpasswd-pw")
                .await
                .expect("verifies");
            assert!(
                ok.accepted && ok.user_known && !ok.cache_hit,
                "{mode}: {ok:?}"
            );
            assert_eq!(ok.mode, mode);
            assert!(ok.hash_micros > 0);
            let ok = v
                .verify(&users, b"carol", b"rounds-pw")
                .await
                .expect("verifies");
            assert!(ok.accepted, "{mode}");
            let wrong = v
                .verify(&users, b"bob", b"mkpasswd-pw")
                .await
                .expect("verifies");
            assert!(!wrong.accepted && wrong.user_known, "{mode}");
            let unknown = v
                .verify(&users, b"mallory", b"openssl-pw")
                .await
                .expect("verifies");
            assert!(!unknown.accepted && !unknown.user_known, "{mode}");
            // The dummy costs a real hash. Skipping it would make the unknown user's check
            // ~1000× cheaper than a wrong password's; the 20× margin absorbs preemption of
            // this thread on a loaded machine (wall-clock times).
            assert!(
                unknown.hash_micros * 20 >= wrong.hash_micros,
                "{mode}: {unknown:?} vs {wrong:?}"
            );
        }
    });
}

#[test]
fn oversize_password_is_rejected_without_hashing() {
    // A user whose hash would take hours: returning at once proves nothing was hashed.
    let costly = format!("$6$rounds=999999999$salt${}", ".".repeat(86));
    let text = format!("slow:{costly}\n");
    let limits = UsersLimits {
        max_hash_rounds: 999_999_999,
    };
    let users = Users::parse(Path::new("u"), &text, &limits).expect("loads");
    assert_eq!(
        PasswordHash::parse(&costly).expect("parses").rounds(),
        999_999_999
    );
    common::run(move || async move {
        for mode in [HashMode::Inline, HashMode::Yield] {
            let v = verifier(mode, None);
            let start = Instant::now();
            let err = v
                .verify(&users, b"slow", &[b'x'; 257])
                .await
                .expect_err("refused");
            assert_eq!(err, AuthError::PasswordTooLong { len: 257, max: 256 });
            assert!(start.elapsed() < Duration::from_secs(1));
        }
    });
}

/// Counts how often a busy neighbour task ran while `verify` was in progress.
async fn neighbour_runs_during(mode: HashMode, users: &Users) -> u64 {
    let ticks = Rc::new(Cell::new(0u64));
    let stop = Rc::new(Cell::new(false));
    let (t, s) = (ticks.clone(), stop.clone());
    let neighbour = glommio::spawn_local(async move {
        while !s.get() {
            t.set(t.get() + 1);
            futures_lite::future::yield_now().await;
        }
    });
    futures_lite::future::yield_now().await; // let it start
    let v = verifier(mode, None);
    let before = ticks.get();
    let r = v.verify(users, b"big", b"pw").await.expect("verifies");
    let during = ticks.get() - before;
    assert!(r.accepted);
    stop.set(true);
    neighbour.await;
    during
}

#[test]
fn yield_mode_lets_other_tasks_run_during_a_long_hash() {
    let hash = HashSetting::new(50_000, "yieldtestsalt")
        .expect("salt ok")
        .hash(b"pw");
    let text = format!("big:{hash}\n");
    let users = Users::parse(Path::new("u"), &text, &UsersLimits::default()).expect("loads");
    common::run(move || async move {
        let inline = neighbour_runs_during(HashMode::Inline, &users).await;
        let yielding = neighbour_runs_during(HashMode::Yield, &users).await;
        // 50,000 rounds take ≥ 5 ms; with a 500 µs quota the hash yields ≥ 5 times.
        assert_eq!(inline, 0, "inline never yields");
        assert!(yielding >= 5, "neighbour ran only {yielding} times");
    });
}

#[test]
fn offload_survives_a_panicking_job_and_reports_queue_full() {
    let pool = OffloadPool::new(1, 1).expect("pool");
    assert_eq!((pool.threads(), pool.capacity()), (1, 1));
    common::run(move || async move {
        let boom = pool
            .submit(|| -> u32 { panic!("job panics on purpose") })
            .expect("queued");
        assert_eq!(boom.await, Err(OffloadError::Panicked));
        let fine = pool.submit(|| 41 + 1).expect("queued");
        assert_eq!(fine.await, Ok(42), "the thread survived the panic");

        // Block the only thread, fill the one queue slot, and see the next one refused.
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        let blocker = pool
            .submit(move || started_tx.send(()).is_ok() && release_rx.recv().is_ok())
            .expect("queued");
        while started_rx.try_recv().is_err() {
            glommio::timer::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(pool.running(), 1);
        let queued = pool.submit(|| 7).expect("queued");
        assert_eq!(pool.queue_depth(), 1);
        assert_eq!(
            pool.submit(|| 8).map(|_| ()).err(),
            Some(OffloadError::QueueFull(1))
        );
        release_tx.send(()).expect("blocker waits");
        assert_eq!(blocker.await, Ok(true));
        assert_eq!(queued.await, Ok(7));
        assert_eq!(pool.queue_depth(), 0);

        // A login whose job fails reports the offload error.
        let users = common::tool_users();
        let v = verifier(HashMode::Offload, Some(pool.clone()));
        assert!(
            v.verify(&users, b"alice", b"mkpasswd-pw")
                .await
                .expect("ok")
                .accepted
        );
    });
}

#[test]
fn cache_skips_the_hash_on_repeat_login_and_resets_on_reload() {
    common::run(|| async {
        let cache = CacheConfig {
            ttl: Duration::from_secs(60),
            capacity: 16,
        };
        let v = Verifier::new(VerifierConfig {
            mode: HashMode::Inline,
            cache,
            ..VerifierConfig::default()
        })
        .expect("config ok");
        let users = common::tool_users();
        let first = v
            .verify(&users, b"alice", b"mkpasswd-pw")
            .await
            .expect("ok");
        assert!(first.accepted && !first.cache_hit);
        let second = v
            .verify(&users, b"alice", b"mkpasswd-pw")
            .await
            .expect("ok");
        assert!(second.accepted && second.cache_hit);
        assert_eq!(second.hash_micros, 0);
        let wrong = v.verify(&users, b"alice", b"nope").await.expect("ok");
        assert!(!wrong.accepted && !wrong.cache_hit);
        let reloaded = common::tool_users();
        let third = v
            .verify(&reloaded, b"alice", b"mkpasswd-pw")
            .await
            .expect("ok");
        assert!(
            third.accepted && !third.cache_hit,
            "new generation empties the cache"
        );
        assert_eq!(v.cache_stats(), Some((1, 3)));
    });
}
