//! BGREWRITEAOF, BGSAVE and SAVE: each asks every shard to rewrite its append-only log
//! (shardline keeps no RDB snapshot: its log rewrite is its save). BGREWRITEAOF and BGSAVE
//! reply at once, as Redis; SAVE replies once every shard has finished.

use std::rc::Rc;
use std::time::Duration;

use crate::resp::Frame;
use crate::shard::Shard;

/// How often SAVE looks whether the shards are done.
const SAVE_POLL: Duration = Duration::from_millis(20);

/// Runs `name` (`bgrewriteaof`, `bgsave` or `save`).
pub async fn rewrite(shard: &Rc<Shard>, name: &str) -> Frame {
    let before = states(shard).await;
    if before.iter().any(|s| s.is_none()) {
        return Frame::error("ERR append only file is off (--appendonly no): nothing to save");
    }
    let busy = before.iter().flatten().any(|s| s.running);
    if busy && name == "bgrewriteaof" {
        return Frame::error("ERR Background append only file rewriting already in progress");
    }
    shard
        .run_on_all(|| {
            Box::new(|s: &Shard| {
                if let Some(aof) = &s.aof {
                    aof.rewrite.requested.set(true);
                }
                Frame::ok()
            })
        })
        .await;
    match name {
        "bgrewriteaof" => Frame::Simple("Background append only file rewriting started".into()),
        "bgsave" => Frame::Simple("Background saving started".into()),
        _ => loop {
            glommio::timer::sleep(SAVE_POLL).await;
            let now = states(shard).await;
            let finished = now
                .iter()
                .zip(&before)
                .all(|(now, before)| match (now, before) {
                    (Some(now), Some(before)) => {
                        !now.requested && !now.running && now.ended > before.ended
                    }
                    _ => true,
                });
            if finished {
                break if now.iter().flatten().any(|s| s.failed) {
                    Frame::error("ERR the append-only log rewrite failed (see the server log)")
                } else {
                    Frame::ok()
                };
            }
        },
    }
}

/// One shard's rewrite state.
#[derive(Debug, Clone, Copy)]
struct State {
    requested: bool,
    running: bool,
    failed: bool,
    /// Rewrites ended (successful or not).
    ended: i64,
}

async fn states(shard: &Rc<Shard>) -> Vec<Option<State>> {
    shard
        .run_on_all(|| {
            Box::new(|s: &Shard| match &s.aof {
                None => Frame::Null,
                Some(aof) => {
                    let r = &aof.rewrite;
                    Frame::Array(
                        [
                            i64::from(r.requested.get()),
                            i64::from(r.started.get().is_some()),
                            i64::from(r.last_failed.get()),
                            (r.done.get() + r.failures.get()) as i64,
                        ]
                        .into_iter()
                        .map(Frame::Integer)
                        .collect(),
                    )
                }
            })
        })
        .await
        .into_iter()
        .map(|frame| match frame {
            Frame::Array(items) => {
                let v: Vec<i64> = items
                    .into_iter()
                    .map(|f| if let Frame::Integer(n) = f { n } else { 0 })
                    .collect();
                (v.len() == 4).then(|| State {
                    requested: v[0] != 0,
                    running: v[1] != 0,
                    failed: v[2] != 0,
                    ended: v[3],
                })
            }
            _ => None,
        })
        .collect()
}
