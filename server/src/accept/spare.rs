//! Spare descriptors: accept(2) needs a free descriptor even to refuse a connection, so
//! descriptors are held in reserve (on `/dev/null`) to be given up for exactly that — the
//! "reserve descriptor" trick of libev and nginx.
//!
//! Descriptors are process-wide, so the spares are too: one per shard in one pool, and a
//! lock serialises every close–accept–close–reopen sequence, so that one shard never takes
//! the descriptor another has just freed for its own refusal. (Other threads still may; the
//! pool then runs short and refills when descriptors come back.)

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Mutex, MutexGuard};

use socket2::SockRef;

/// How [`SpareDescriptors::refuse_waiting`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// No connection waits any more.
    Empty,
    /// The batch is used up; more connections may wait.
    Batch,
    /// No connection could be accepted: no spare was left to give up, or another thread
    /// took the freed descriptor first.
    Stuck,
}

/// The pool of spare descriptors (see the module docs).
#[derive(Debug)]
pub struct SpareDescriptors {
    wanted: usize,
    held: Mutex<Vec<File>>,
}

impl SpareDescriptors {
    /// A pool of `wanted` spares (one per shard), opened now as far as descriptors allow.
    pub fn new(wanted: usize) -> Self {
        let pool = Self {
            wanted,
            held: Mutex::new(Vec::with_capacity(wanted)),
        };
        pool.refill(&mut pool.lock());
        pool
    }

    /// Spares held now.
    pub fn held(&self) -> usize {
        self.lock().len()
    }

    /// Accepts up to `batch` connections waiting on `listener`, each with a spare's
    /// descriptor, calls `refuse` on each and closes it, then takes the spare back.
    /// Returns how many were refused and how it ended. Holds the pool's lock throughout:
    /// keep `batch` small (a few syscalls per connection).
    pub fn refuse_waiting(
        &self,
        listener: BorrowedFd<'_>,
        batch: usize,
        mut refuse: impl FnMut(BorrowedFd<'_>),
    ) -> (u64, Drained) {
        let listener = SockRef::from(&listener);
        let mut held = self.lock();
        let mut refused = 0;
        for _ in 0..batch {
            self.refill(&mut held);
            if held.pop().is_none() {
                return (refused, Drained::Stuck);
            }
            // The refused connection is closed (dropped) before the spare is reopened: that
            // frees the descriptor the spare needs.
            match listener.accept() {
                Ok((socket, _)) => {
                    refuse(socket.as_fd());
                    refused += 1;
                }
                Err(err) => {
                    self.refill(&mut held);
                    let drained = if err.kind() == io::ErrorKind::WouldBlock {
                        Drained::Empty
                    } else {
                        Drained::Stuck
                    };
                    return (refused, drained);
                }
            }
        }
        self.refill(&mut held);
        (refused, Drained::Batch)
    }

    /// Whether descriptors are back: every spare is held again and one more descriptor can
    /// be opened.
    pub fn descriptors_back(&self) -> bool {
        let mut held = self.lock();
        self.refill(&mut held);
        held.len() == self.wanted && open_spare().is_ok()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<File>> {
        // The pool stays consistent even if a holder panicked: it is only a list of files.
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn refill(&self, held: &mut Vec<File>) {
        while held.len() < self.wanted {
            match open_spare() {
                Ok(file) => held.push(file),
                Err(_) => break,
            }
        }
    }
}

fn open_spare() -> io::Result<File> {
    File::open("/dev/null")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    #[test]
    fn refuses_every_waiting_connection_then_reports_an_empty_queue() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let clients: Vec<TcpStream> = (0..5)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let spares = SpareDescriptors::new(2);
        assert_eq!(spares.held(), 2);
        let mut seen = 0;
        let (refused, drained) = spares.refuse_waiting(listener.as_fd(), 3, |_| seen += 1);
        assert_eq!((refused, drained, seen), (3, Drained::Batch, 3));
        let (refused, drained) = spares.refuse_waiting(listener.as_fd(), 3, |_| seen += 1);
        assert_eq!((refused, drained, seen), (2, Drained::Empty, 5));
        assert_eq!(spares.held(), 2);
        assert!(spares.descriptors_back());
        // Every client sees its connection closed.
        for mut client in clients {
            use std::io::Read;
            let mut byte = [0u8; 1];
            assert_eq!(client.read(&mut byte).expect("EOF"), 0);
        }
    }
}
