//! Process-wide graceful shutdown signal, awaited by every shard.

use std::sync::atomic::{AtomicBool, Ordering};

use event_listener::Event;

/// Set once by the signal thread (SIGINT/SIGTERM); every shard's accept loop and every idle
/// connection wait on it. Waking crosses threads, which glommio's wakers support.
#[derive(Debug, Default)]
pub struct Shutdown {
    requested: AtomicBool,
    event: Event,
}

impl Shutdown {
    /// Asks every shard to stop accepting and to close its connections after their in-flight
    /// replies. Idempotent.
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.event.notify(usize::MAX);
    }

    /// Whether shutdown was requested.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Resolves once shutdown is requested (at once if it already was).
    pub async fn wait(&self) {
        loop {
            if self.is_requested() {
                return;
            }
            let listener = self.event.listen();
            if self.is_requested() {
                return;
            }
            listener.await;
        }
    }
}
