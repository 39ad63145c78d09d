//! The per-shard log writer with group commit (Redis 7 `flushAppendOnlyFile`, one flush per
//! loop turn): commands append their records to an in-memory buffer; one flusher task per
//! shard writes the whole buffer through glommio's io_uring [`BufferedFile`]. With
//! `appendfsync always` the group is written with `RWF_DSYNC` (write and fdatasync in one
//! io_uring request) and the replies of its records are released when it returns; records
//! appended meanwhile form the next group.
//!
//! The kernel runs that request in an io_uring worker thread, which shares the shard's CPU:
//! while the shard keeps executing commands, the worker would wait for the end of the shard's
//! time slice at each step of the write (page cache, journal commit, device flush). So a shard
//! appending records while its durable write runs yields its CPU (`sched_yield`) at most once
//! per `--aof-fsync-yield-us`.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use glommio::io::BufferedFile;
use tracing::{error, info};

use super::record::encode;
use super::AppendFsync;

/// What runs once the records a reply depends on are on disk: it sends the reply.
pub type Release = Box<dyn FnOnce()>;

/// Something waiting for an fdatasync: a reply to send, or a task to wake.
enum Waiter {
    Run(Release),
    Wake(Waker),
}

/// A point in one shard's log (`appendfsync always`): the records appended up to it must be on
/// disk before a reply computed at that point may leave. Cheap to hold (no allocation).
pub struct SyncPoint {
    writer: Rc<LogWriter>,
    seq: u64,
}

impl SyncPoint {
    /// Resolves once every record up to this point is covered by an fdatasync.
    pub async fn reached(&self) {
        poll_fn(|cx| {
            if self.writer.synced.get() >= self.seq {
                Poll::Ready(())
            } else {
                self.writer
                    .waiters
                    .borrow_mut()
                    .push((self.seq, Waiter::Wake(cx.waker().clone())));
                Poll::Pending
            }
        })
        .await
    }
}

/// One shard's open log and the records not yet written to it.
pub struct LogWriter {
    file: RefCell<Rc<BufferedFile>>,
    path: RefCell<String>,
    /// One group write (and file switch) at a time: the flusher, a shutdown flush and a
    /// rewrite's switch take turns.
    lock: glommio::sync::Semaphore,
    /// One fdatasync of [`Self::sync_written`] at a time (everysec, shutdown).
    sync_lock: glommio::sync::Semaphore,
    /// Whether a group write that replies wait for (`always`) is running now.
    durable_write_running: Cell<bool>,
    /// The most a shard runs between two CPU yields to a running durable write (0: never).
    fsync_yield: Cell<Duration>,
    last_yield: Cell<Instant>,
    /// A switch to a new incremental file: (bytes of the buffer that still belong to the
    /// current file, the new file, its path). Set by a rewrite; done by the next group write.
    rotation: RefCell<Option<(usize, BufferedFile, String)>>,
    /// `appendfsync` in force (CONFIG SET changes it: [`LogWriter::set_fsync`]).
    fsync: Cell<AppendFsync>,
    /// The database of the last record appended to the current file (Redis
    /// `aof_selected_db`): 0 for a new, empty file (replay starts every file at database 0,
    /// so a file's first record names its database unless it is 0), `None` (unknown) when
    /// appending to a file that already holds records, so the next record is preceded by a
    /// `SELECT`.
    selected: Cell<Option<usize>>,
    buf: RefCell<Vec<u8>>,
    /// While a script runs with writes on this shard ([`LogWriter::hold`]): its records, kept
    /// out of `buf` until it ends, and how many.
    held: RefCell<Option<(Vec<u8>, u64)>>,
    /// Records appended since start (sequence numbers are 1-based).
    appended: Cell<u64>,
    /// Records written to the file.
    written: Cell<u64>,
    /// Records covered by an fdatasync.
    synced: Cell<u64>,
    /// Bytes in the file (its write position).
    size: Cell<u64>,
    /// Replies waiting for their record's fdatasync (`always`): (sequence, waiter), in no
    /// particular order.
    waiters: RefCell<Vec<(u64, Waiter)>>,
    flusher: Cell<Option<Waker>>,
    /// Why the last write or fdatasync failed, while it does (INFO `aof_last_write_status`;
    /// write commands are refused with `MISCONF` meanwhile).
    write_error: RefCell<Option<String>>,
    stats: RefCell<WriterStats>,
}

/// Counters of one writer, for metrics and INFO.
#[derive(Debug, Default, Clone)]
pub struct WriterStats {
    /// Records appended.
    pub records: u64,
    /// Bytes written to the file.
    pub bytes_written: u64,
    /// Group writes (each one io_uring write of everything buffered).
    pub writes: u64,
    /// Failed writes and fdatasyncs (each retried a second later).
    pub write_errors: u64,
    /// fdatasync calls and `RWF_DSYNC` group writes completed.
    pub fsyncs: u64,
    /// Times the shard yielded its CPU to a running durable write.
    pub cpu_yields: u64,
    /// Records covered by those fdatasync calls (`records_synced / fsyncs` = group size).
    pub records_synced: u64,
    /// Duration of each fdatasync (or `RWF_DSYNC` group write) not yet taken by
    /// [`LogWriter::take_stats`], µs.
    pub fsync_latencies_us: Vec<u64>,
}

impl LogWriter {
    /// A writer appending to `file`, whose current size is `size` bytes.
    pub fn new(file: BufferedFile, path: String, size: u64, fsync: AppendFsync) -> Rc<Self> {
        Rc::new(Self {
            file: RefCell::new(Rc::new(file)),
            path: RefCell::new(path),
            lock: glommio::sync::Semaphore::new(1),
            sync_lock: glommio::sync::Semaphore::new(1),
            durable_write_running: Cell::new(false),
            fsync_yield: Cell::new(Duration::ZERO),
            last_yield: Cell::new(Instant::now()),
            rotation: RefCell::new(None),
            fsync: Cell::new(fsync),
            selected: Cell::new((size == 0).then_some(0)),
            buf: RefCell::new(Vec::with_capacity(64 << 10)),
            held: RefCell::new(None),
            appended: Cell::new(0),
            written: Cell::new(0),
            synced: Cell::new(0),
            size: Cell::new(size),
            waiters: RefCell::new(Vec::new()),
            flusher: Cell::new(None),
            write_error: RefCell::new(None),
            stats: RefCell::new(WriterStats::default()),
        })
    }

    /// Appends records with `fill` (which writes zero or more complete records into the
    /// buffer and returns how many) and wakes the flusher.
    pub fn append(&self, fill: impl FnOnce(&mut Vec<u8>) -> u64) {
        if let Some((held, records)) = self.held.borrow_mut().as_mut() {
            *records += fill(held);
            return;
        }
        let added = fill(&mut self.buf.borrow_mut());
        if added == 0 {
            return;
        }
        self.appended.set(self.appended.get() + added);
        self.stats.borrow_mut().records += added;
        if self.durable_write_running.get() {
            self.yield_to_durable_write();
        }
        if let Some(waker) = self.flusher.take() {
            waker.wake();
        }
    }

    /// Sets the most a shard runs between two CPU yields to its running durable write
    /// (`--aof-fsync-yield-us`; zero: never yield).
    pub fn set_fsync_yield(&self, every: Duration) {
        self.fsync_yield.set(every);
    }

    /// Gives the CPU to the io_uring worker running the durable write (if it is runnable on
    /// this CPU; `sched_yield` returns at once otherwise), at most once per `fsync_yield`.
    fn yield_to_durable_write(&self) {
        let every = self.fsync_yield.get();
        if every.is_zero() {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.last_yield.get()) < every {
            return;
        }
        self.last_yield.set(now);
        self.stats.borrow_mut().cpu_yields += 1;
        std::thread::yield_now();
    }

    /// Appends `SELECT db` to `out` (a buffer being filled by [`Self::append`]) unless the
    /// last record appended was for database `db` (Redis 7 `feedAppendOnlyFile`); returns the
    /// records added (0 or 1).
    pub fn select(&self, out: &mut Vec<u8>, db: usize) -> u64 {
        select_record(&self.selected, out, db)
    }

    /// Where the next record goes: (buffer length, records appended). Taken at the start of a
    /// transaction that runs synchronously (no await until [`Self::wrap_multi`]).
    pub fn mark(&self) -> (usize, u64) {
        (self.buf.borrow().len(), self.appended.get())
    }

    /// Wraps the records appended since `mark` in `MULTI` … `EXEC`, so replay applies them all
    /// or none (Redis 7 writes a transaction the same way). Nothing when none was appended.
    pub fn wrap_multi(&self, mark: (usize, u64)) {
        let (start, seq) = mark;
        if self.appended.get() == seq {
            return;
        }
        let mut buf = self.buf.borrow_mut();
        let mut multi = Vec::new();
        encode(&mut multi, &[&b"MULTI"[..]]);
        buf.splice(start..start, multi);
        encode(&mut buf, &[&b"EXEC"[..]]);
        drop(buf);
        self.appended.set(self.appended.get() + 2);
        self.stats.borrow_mut().records += 2;
    }

    /// From now on, records are kept aside until [`Self::release_held`]: a script whose
    /// writes on this shard may be spread over awaits (hops, yields) logs them as one
    /// transaction at its end, so neither a flush in between nor a crash splits them. Nothing
    /// when already holding.
    pub fn hold(&self) {
        let mut held = self.held.borrow_mut();
        if held.is_none() {
            *held = Some((Vec::new(), 0));
        }
    }

    /// Appends the records kept since [`Self::hold`], wrapped in `MULTI` … `EXEC` when there
    /// are two or more, and stops holding.
    pub fn release_held(&self) {
        let Some((held, records)) = self.held.borrow_mut().take() else {
            return;
        };
        self.append(|buf| {
            if records < 2 {
                buf.extend_from_slice(&held);
                return records;
            }
            encode(buf, &[&b"MULTI"[..]]);
            buf.extend_from_slice(&held);
            encode(buf, &[&b"EXEC"[..]]);
            records + 2
        });
    }

    /// With `appendfsync always`: the point every record appended so far must reach before a
    /// reply computed now may leave, or `None` when nothing is pending (or the policy is not
    /// `always`).
    pub fn sync_point(self: &Rc<Self>) -> Option<SyncPoint> {
        self.pending().then(|| SyncPoint {
            writer: self.clone(),
            seq: self.appended.get(),
        })
    }

    /// Whether, under `appendfsync always`, records appended so far still wait for their
    /// fdatasync (a reply leaving now could announce a write a crash would lose).
    pub fn pending(&self) -> bool {
        self.fsync.get() == AppendFsync::Always && self.synced.get() < self.appended.get()
    }

    /// Runs `release` once every record appended so far is on disk (at once if none waits).
    pub fn after_sync(&self, release: Release) {
        if self.pending() {
            self.waiters
                .borrow_mut()
                .push((self.appended.get(), Waiter::Run(release)));
        } else {
            release();
        }
    }

    /// From now on, records go to `file` (a new, empty incremental log at `path`): those
    /// appended before this call still go to the current file, which is fdatasync'ed before
    /// the switch. Called in the same synchronous step as the keyspace snapshot starts.
    pub fn rotate(&self, file: BufferedFile, path: String) {
        // A script's records so far describe the state the snapshot starts from.
        let held = self.held.borrow_mut().take();
        if let Some((records, count)) = held {
            self.append(|buf| {
                buf.extend_from_slice(&records);
                count
            });
            self.hold();
        }
        let at = self.buf.borrow().len();
        *self.rotation.borrow_mut() = Some((at, file, path));
        // The new file is replayed from database 0: its first record names its database
        // unless it is 0 (Redis sets `aof_selected_db = -1`; this saves that SELECT 0).
        self.selected.set(Some(0));
        if let Some(waker) = self.flusher.take() {
            waker.wake();
        }
    }

    /// Waits until a switch asked by [`Self::rotate`] is done.
    pub async fn rotated(&self) {
        while self.rotation.borrow().is_some() {
            self.write_group().await;
        }
    }

    /// Path of the file records are appended to now.
    pub fn path(&self) -> String {
        self.path.borrow().clone()
    }

    /// Bytes in the current file plus bytes buffered.
    pub fn current_size(&self) -> u64 {
        self.size.get() + self.buf.borrow().len() as u64
    }

    /// Bytes appended but not yet handed to the file (INFO `aof_buffer_length`).
    pub fn buffered(&self) -> u64 {
        self.buf.borrow().len() as u64
    }

    /// Whether every record appended so far is in the file (written, not necessarily
    /// fdatasync'ed): nothing buffered, no group write or file switch pending.
    pub fn all_written(&self) -> bool {
        self.written.get() >= self.appended.get()
            && self.buf.borrow().is_empty()
            && self.rotation.borrow().is_none()
    }

    /// Records appended since start.
    pub fn appended(&self) -> u64 {
        self.appended.get()
    }

    /// Whether the last write or fdatasync failed.
    pub fn write_failed(&self) -> bool {
        self.write_error.borrow().is_some()
    }

    /// Why the last write or fdatasync failed (the OS error, e.g. `No space left on device
    /// (os error 28)`), or `None` when the last one succeeded.
    pub fn write_error(&self) -> Option<String> {
        self.write_error.borrow().clone()
    }

    /// A copy of the counters, taking the fsync latencies recorded since the last call.
    pub fn take_stats(&self) -> WriterStats {
        let mut stats = self.stats.borrow_mut();
        let copy = stats.clone();
        stats.fsync_latencies_us.clear();
        copy
    }

    /// The flusher task: writes each group and, under `always`, hands it to the syncers. Runs
    /// until the shard stops (cancelled), after [`Self::flush`] at shutdown.
    pub async fn run_flusher(self: Rc<Self>) {
        loop {
            poll_fn(|cx| {
                // Idle, everything appended is written; under `always` it must be synced too
                // (after a switch to `always`, even if nothing else is appended).
                if self.buf.borrow().is_empty()
                    && self.rotation.borrow().is_none()
                    && !self.pending()
                {
                    self.flusher.set(Some(cx.waker().clone()));
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            })
            .await;
            self.write_group().await;
        }
    }

    /// `appendfsync everysec`: one fdatasync a second when something was written since the
    /// last one (Redis runs it in a background thread; here it is an io_uring request). Idle
    /// while the policy is another.
    pub async fn run_everysec(self: Rc<Self>) {
        loop {
            glommio::timer::sleep(Duration::from_secs(1)).await;
            if self.fsync.get() == AppendFsync::Everysec {
                self.sync_written().await;
            }
        }
    }

    /// The `appendfsync` policy in force.
    pub fn fsync_policy(&self) -> AppendFsync {
        self.fsync.get()
    }

    /// Switches the `appendfsync` policy (CONFIG SET): the once-a-second task
    /// ([`LogWriter::run_everysec`]) runs for the writer's life and acts only under
    /// `everysec`. Replies already waiting for their records are released by the next group
    /// write, which is durable while any wait.
    pub fn set_fsync(&self, fsync: AppendFsync) {
        self.fsync.set(fsync);
        if self.pending() {
            // Records written without an fdatasync: replies computed from now on wait for
            // them, so the flusher syncs them even if nothing else is appended.
            if let Some(waker) = self.flusher.take() {
                waker.wake();
            }
        }
    }

    /// Writes and fdatasyncs everything appended so far (shutdown; `SAVE`).
    pub async fn flush(&self) {
        while !self.buf.borrow().is_empty() || self.rotation.borrow().is_some() {
            self.write_group().await;
        }
        self.sync_written().await;
    }

    /// Writes the buffered records (switching files first if a rotation is due).
    async fn write_group(&self) {
        let Ok(_turn) = self.lock.acquire_permit(1).await else {
            return;
        };
        let mut data = std::mem::take(&mut *self.buf.borrow_mut());
        let upto = self.appended.get();
        let len = data.len() as u64;
        let rotation = self.rotation.borrow_mut().take();
        if let Some((at, file, path)) = rotation {
            let rest = data.split_off(at.min(data.len()));
            self.write_all(data).await;
            // Everything counted in `written` so far is in the old file: once it is synced,
            // later records are covered by syncs of the new file.
            let old = self.file.borrow().clone();
            while !self.sync(&old).await {}
            *self.file.borrow_mut() = Rc::new(file);
            *self.path.borrow_mut() = path;
            self.size.set(0);
            data = rest;
        }
        // Durable under `always`, and while replies still wait after a switch away from it.
        let durable = self.fsync.get() == AppendFsync::Always || !self.waiters.borrow().is_empty();
        if durable {
            self.durable_write_running.set(true);
            if self.synced.get() >= self.written.get() {
                // Everything written before is on disk: one RWF_DSYNC write (one hop to an
                // io_uring worker) makes the group durable, where a write and an fdatasync
                // take two. Nothing to write (a rotation took it all): nothing to sync.
                if !data.is_empty() {
                    let started = Instant::now();
                    self.write_all_dsync(data).await;
                    self.record_fsync(started);
                }
            } else {
                // Records written without an fdatasync (before a switch to `always`): one
                // fdatasync of the file covers them and the group.
                self.write_all(data).await;
                let file = self.file.borrow().clone();
                while !self.sync(&file).await {}
            }
            self.durable_write_running.set(false);
            self.written.set(upto);
            self.mark_synced(upto);
        } else {
            self.write_all(data).await;
            self.written.set(upto);
        }
        let mut stats = self.stats.borrow_mut();
        stats.bytes_written += len;
        stats.writes += 1;
    }

    /// One fdatasync covering every record written so far, then the release of the replies
    /// waiting for them. A failed fdatasync is retried (after a pause): the replies wait.
    async fn sync_written(&self) {
        let Ok(_turn) = self.sync_lock.acquire_permit(1).await else {
            return;
        };
        // Taken together: `written` counts records in this file or in older files that were
        // synced before the switch to it.
        let upto = self.written.get();
        let file = self.file.borrow().clone();
        if self.synced.get() >= upto {
            return;
        }
        while !self.sync(&file).await {}
        self.mark_synced(upto);
    }

    /// Records that the first `upto` records are on disk and releases the replies waiting for
    /// them (nothing when a newer fdatasync already covered them).
    fn mark_synced(&self, upto: u64) {
        let synced = self.synced.get();
        if upto <= synced {
            return;
        }
        self.stats.borrow_mut().records_synced += upto - synced;
        self.synced.set(upto);
        self.release_synced();
    }

    /// Sends every waiting reply whose records are now covered by an fdatasync.
    fn release_synced(&self) {
        let synced = self.synced.get();
        let due: Vec<(u64, Waiter)> = {
            let mut waiters = self.waiters.borrow_mut();
            let (due, waiting) = std::mem::take(&mut *waiters)
                .into_iter()
                .partition(|(seq, _)| *seq <= synced);
            *waiters = waiting;
            due
        };
        // The order does not matter: each connection's pipeline keeps its replies in order.
        for (_, waiter) in due {
            match waiter {
                Waiter::Run(release) => release(),
                Waiter::Wake(waker) => waker.wake(),
            }
        }
    }

    /// Writes `data` at the end of the file, retrying (once a second) until it is all written:
    /// a record is never skipped, so the log never has a hole.
    async fn write_all(&self, data: Vec<u8>) {
        self.write_all_with(data, false).await
    }

    /// [`Self::write_all`] with `RWF_DSYNC`: each write returns once its bytes are on disk.
    async fn write_all_dsync(&self, data: Vec<u8>) {
        self.write_all_with(data, true).await
    }

    async fn write_all_with(&self, data: Vec<u8>, dsync: bool) {
        // glommio takes the buffer; a copy keeps the bytes for a retry after an error.
        let mut done = 0;
        while done < data.len() {
            let pos = self.size.get();
            let file = self.file.borrow().clone();
            let chunk = data[done..].to_vec();
            let written = if dsync {
                file.write_at_dsync(chunk, pos).await
            } else {
                file.write_at(chunk, pos).await
            };
            match written {
                Ok(n) if n > 0 => {
                    done += n;
                    self.size.set(pos + n as u64);
                    self.recovered();
                }
                Ok(_) => self.failed("wrote 0 bytes".into()).await,
                Err(err) => self.failed(os_error(err)).await,
            }
        }
    }

    async fn sync(&self, file: &BufferedFile) -> bool {
        let started = Instant::now();
        match file.fdatasync().await {
            Ok(()) => {
                self.recovered();
                self.record_fsync(started);
                true
            }
            Err(err) => {
                self.failed(os_error(err)).await;
                false
            }
        }
    }

    /// Counts an fdatasync (or `RWF_DSYNC` group write) begun at `started` that succeeded.
    fn record_fsync(&self, started: Instant) {
        let mut stats = self.stats.borrow_mut();
        stats.fsyncs += 1;
        stats
            .fsync_latencies_us
            .push(started.elapsed().as_micros() as u64);
    }

    async fn failed(&self, what: String) {
        self.stats.borrow_mut().write_errors += 1;
        let first = self.write_error.replace(Some(what.clone())).is_none();
        if first {
            error!(
                "append-only log {}: {what}; retrying every second. Write commands on this \
                 shard are refused (MISCONF) until it succeeds; with appendfsync always the \
                 replies of writes already made wait",
                self.path.borrow()
            );
        }
        glommio::timer::sleep(Duration::from_secs(1)).await;
    }

    fn recovered(&self) {
        if self.write_error.take().is_some() {
            info!(
                "append-only log {}: writing works again; write commands are accepted",
                self.path.borrow()
            );
        }
    }
}

/// The OS error behind a failed file operation, as `strerror` words plus the code (what
/// Redis's `MISCONF` reply shows), or glommio's own text when there is no OS error.
fn os_error(err: glommio::GlommioError<()>) -> String {
    match err {
        glommio::GlommioError::EnhancedIoError { source, .. } => source.to_string(),
        glommio::GlommioError::IoError(source) => source.to_string(),
        other => other.to_string(),
    }
}

/// Appends `SELECT db` to `out` unless `selected` (the database of the last record logged,
/// `None`: unknown) is `db` already, and remembers `db`; returns the records added (0 or 1).
pub fn select_record(selected: &Cell<Option<usize>>, out: &mut Vec<u8>, db: usize) -> u64 {
    if selected.replace(Some(db)) == Some(db) {
        return 0;
    }
    encode(out, &[&b"SELECT"[..], db.to_string().as_bytes()]);
    1
}
