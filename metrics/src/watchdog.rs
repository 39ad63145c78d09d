//! The stall watchdog: reports a poll while it is still running, with a backtrace of the
//! shard thread, as Seastar's `cpu_stall_detector` does (`stall_detector.hh`): first once the
//! poll has run `--blocked-reactor-notify-ms`, then at 2×, 4×, … that, within the same
//! per-minute report limit as the reports made when polls end.
//!
//! How: every shard publishes the start of the poll it is running (one relaxed store at each
//! poll's start and end, [`PollWatch`]). One process-wide thread, `stall-watchdog`, looks at
//! them every [`tick`] (a quarter of the threshold, 5–50 ms). For a poll past its next report
//! point it sends the shard thread [`CAPTURE_SIGNAL`]; the handler, on the shard thread, walks
//! its stack into a fixed buffer (no allocation, no lock of ours) together with the task queue
//! and activity of the poll, and the watchdog thread logs it with one `module+0xOFFSET` line
//! per frame, Seastar's form (`addr2line -Cfie target/release/shardline 0xOFFSET …` names
//! them; resolving names in the server would cost ~100 MB of memory for the debug information):
//!
//! `Reactor stalled for 26 ms on shard 0 and still running, in task queue main, while command
//! debug; backtrace:` then `  0: libc.so.6+0xe9f27 (clock_nanosleep)`, `  1: shardline+0x…`
//!
//! When a reported poll ends, its end is logged once without counting another report:
//! `Reactor stall on shard 0 ended after 2003 ms (on CPU 0 ms, preempted 0 ms, blocked
//! 2003 ms), in task queue main, while command debug`.
//!
//! The stack walk uses the unwinder (`backtrace::trace_unsynchronized`), as Seastar's handler
//! does (`backtrace()`): it is not async-signal-safe in every case (the unwinder may take the
//! dynamic loader's lock, so a thread interrupted inside `dlopen` could deadlock), a risk
//! accepted for a report that only fires on a poll already stalled for the threshold. A
//! handler that does not answer within [`CAPTURE_WAIT`] gives a report without backtrace.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use prometheus::IntCounter;

use crate::activity::Activity;
use crate::context::CONTEXT;
use crate::reporter::{Decision, ReportLimiter};

/// Signal the watchdog sends a stalled shard thread to capture its stack: the third
/// real-time signal above `SIGRTMIN` (glibc keeps the first two for itself).
fn capture_signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

/// Exposed for the docs: see [`capture_signal`].
pub const CAPTURE_SIGNAL: &str = "SIGRTMIN+3";

/// Longest the watchdog waits for a stalled thread's signal handler to capture its stack.
pub(crate) const CAPTURE_WAIT: Duration = Duration::from_millis(50);

/// Deepest stack captured, in frames.
const MAX_FRAMES: usize = 48;

/// Marks of [`PollWatch::running_since`] (stamps stay far below them: 2^62 ns is 146 years).
const REPORTED: u64 = 1 << 63;
const SUPPRESSED: u64 = 1 << 62;
const MARKS: u64 = REPORTED | SUPPRESSED;

/// Capture states.
const IDLE: u8 = 0;
const REQUESTED: u8 = 1;
const CAPTURED: u8 = 2;

/// Nanoseconds since the process's first poll start (never 0, which means "not in a poll").
pub(crate) fn nanos_since_base(at: Instant) -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(|| at - Duration::from_secs(1));
    u64::try_from(at.saturating_duration_since(base).as_nanos())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// The state one shard shares with the watchdog thread.
pub(crate) struct PollWatch {
    shard: usize,
    /// The shard thread.
    thread: libc::pthread_t,
    /// Start of the poll running now ([`nanos_since_base`]), with [`REPORTED`] /
    /// [`SUPPRESSED`] set by the watchdog; 0 between polls. The shard swaps it to 0 as the
    /// poll ends, so a poll is either marked while it runs or not at all.
    running_since: AtomicU64,
    /// The poll the watchdog considered last (its start), and at how many report points
    /// (watchdog thread only).
    considered_poll: AtomicU64,
    reports: AtomicU32,
    /// First report point, ns.
    threshold_ns: u64,
    /// The per-minute limit, shared with the reports made at a poll's end.
    pub(crate) limiter: Arc<Mutex<ReportLimiter>>,
    reported: IntCounter,
    suppressed: IntCounter,
    capture: Capture,
}

/// What the signal handler writes for the watchdog.
struct Capture {
    state: AtomicU8,
    frames: [AtomicUsize; MAX_FRAMES],
    len: AtomicUsize,
    /// Frames of the handler itself and of the kernel's signal trampoline, at the start.
    skip: AtomicUsize,
    /// Task queue and activity of the poll, written by the handler before `state` becomes
    /// CAPTURED and read by the watchdog only after it saw CAPTURED.
    what: UnsafeCell<(&'static str, Activity)>,
}

// SAFETY: `what` is written only by the signal handler while `state` is REQUESTED and read
// only by the watchdog after an Acquire load saw CAPTURED (published with Release); the
// watchdog requests one capture at a time.
unsafe impl Sync for Capture {}

impl PollWatch {
    /// The watch of the calling thread (a shard thread) for shard `shard`.
    pub(crate) fn for_this_thread(
        shard: usize,
        threshold: Duration,
        limiter: Arc<Mutex<ReportLimiter>>,
        reported: IntCounter,
        suppressed: IntCounter,
    ) -> Self {
        Self {
            shard,
            // SAFETY: pthread_self has no preconditions.
            thread: unsafe { libc::pthread_self() },
            running_since: AtomicU64::new(0),
            considered_poll: AtomicU64::new(0),
            reports: AtomicU32::new(0),
            threshold_ns: u64::try_from(threshold.as_nanos()).unwrap_or(u64::MAX),
            limiter,
            reported,
            suppressed,
            capture: Capture {
                state: AtomicU8::new(IDLE),
                frames: [const { AtomicUsize::new(0) }; MAX_FRAMES],
                len: AtomicUsize::new(0),
                skip: AtomicUsize::new(0),
                what: UnsafeCell::new(("", Activity::Unspecified)),
            },
        }
    }

    /// A timed poll starts (`since` from [`nanos_since_base`]).
    #[inline]
    pub(crate) fn poll_started(&self, since: u64) {
        self.running_since.store(since, Ordering::Relaxed);
    }

    /// The poll running ended; what the watchdog did with it while it ran.
    #[inline]
    pub(crate) fn poll_ended(&self) -> Watched {
        let marks = self.running_since.swap(0, Ordering::AcqRel);
        if marks & REPORTED != 0 {
            Watched::Reported
        } else if marks & SUPPRESSED != 0 {
            Watched::Suppressed
        } else {
            Watched::No
        }
    }

    /// Marks the poll stamped `since` with `mark` if it is still running; false once it ended.
    fn mark(&self, since: u64, mark: u64) -> bool {
        self.running_since
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now & !MARKS == since).then_some(now | mark)
            })
            .is_ok()
    }
}

/// What the watchdog did with a poll while it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watched {
    /// Nothing: it ended before its first report point (or there is no watchdog).
    No,
    /// Logged at least one report: its end is logged as the end of a reported stall.
    Reported,
    /// Reached a report point, but the per-minute limit suppressed every report: its end is
    /// not logged (it was counted as suppressed already).
    Suppressed,
}

thread_local! {
    /// The calling shard thread's watch, for the signal handler.
    static THIS_WATCH: Cell<*const PollWatch> = const { Cell::new(std::ptr::null()) };
}

/// A timed poll starts on the calling thread (stamp `since`): shown to the watchdog when the
/// thread has a watch.
#[inline]
pub(crate) fn poll_started(since: u64) {
    let _ = THIS_WATCH.try_with(|slot| {
        let watch = slot.get();
        if !watch.is_null() {
            // SAFETY: see `on_capture_signal`: set and cleared on this thread, kept alive by
            // the shard's monitor meanwhile.
            unsafe { (*watch).poll_started(since) };
        }
    });
}

/// The timed poll running on the calling thread ended: what the watchdog did with it while it
/// ran.
#[inline]
pub(crate) fn poll_ended() -> Watched {
    THIS_WATCH
        .try_with(|slot| {
            let watch = slot.get();
            if watch.is_null() {
                Watched::No
            } else {
                // SAFETY: as in `poll_started`.
                unsafe { (*watch).poll_ended() }
            }
        })
        .unwrap_or(Watched::No)
}

/// The watches of all shards, looked at by the watchdog thread.
fn registry() -> &'static Mutex<Vec<Weak<PollWatch>>> {
    static WATCHES: OnceLock<Mutex<Vec<Weak<PollWatch>>>> = OnceLock::new();
    WATCHES.get_or_init(|| Mutex::new(Vec::new()))
}

/// Registers `watch` (created on the calling shard thread) with the watchdog, which reports
/// its polls once [`start`] has run.
pub(crate) fn register(watch: &Arc<PollWatch>) {
    let _ = THIS_WATCH.try_with(|slot| slot.set(Arc::as_ptr(watch)));
    if let Ok(mut watches) = registry().lock() {
        watches.retain(|w| w.strong_count() > 0);
        watches.push(Arc::downgrade(watch));
    }
}

/// Starts the watchdog thread (once per process), looking every [`tick`] of `notify`, and
/// installs the signal handler. The thread inherits the caller's CPU affinity: call it from a
/// thread pinned away from the shards, so the watchdog does not take a shard's CPU.
pub fn start(notify: Duration) {
    static STARTED: OnceLock<bool> = OnceLock::new();
    STARTED.get_or_init(|| {
        install_handler();
        let tick = tick(notify);
        std::thread::Builder::new()
            .name("stall-watchdog".into())
            .spawn(move || watch_forever(tick))
            .map_err(|err| tracing::error!("cannot start the stall watchdog: {err}"))
            .is_ok()
    });
}

/// Forgets the calling thread's watch (its shard monitor is uninstalled).
pub(crate) fn unregister_this_thread() {
    let _ = THIS_WATCH.try_with(|slot| slot.set(std::ptr::null()));
}

/// How often the watchdog looks: a quarter of the first report point, 5–50 ms.
pub(crate) fn tick(threshold: Duration) -> Duration {
    (threshold / 4).clamp(Duration::from_millis(5), Duration::from_millis(50))
}

fn install_handler() {
    // SAFETY: a zeroed sigaction is valid; the handler only touches atomics, the calling
    // thread's const thread-locals and a fixed buffer (see the module doc for the stack walk).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_capture_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(capture_signal(), &action, std::ptr::null_mut()) != 0 {
            tracing::error!("cannot install the stall watchdog's signal handler");
        }
    }
}

extern "C" fn on_capture_signal(
    _signal: libc::c_int,
    _info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    let Ok(watch) = THIS_WATCH.try_with(Cell::get) else {
        return;
    };
    if watch.is_null() {
        return;
    }
    // SAFETY: the pointer was set by `register` on this thread from an `Arc` the shard's
    // monitor keeps alive until `unregister_this_thread` clears it on this same thread.
    let capture = unsafe { &(*watch).capture };
    if capture.state.load(Ordering::Acquire) != REQUESTED {
        return;
    }
    let mut len = 0;
    let mut skip = 0;
    let handler = on_capture_signal as *const () as usize;
    // SAFETY: see the module doc; frames are only read as addresses.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            if frame.symbol_address() as usize == handler {
                // This handler, then the signal trampoline, then the interrupted code.
                skip = len + 2;
            }
            capture.frames[len].store(frame.ip() as usize, Ordering::Relaxed);
            len += 1;
            len < MAX_FRAMES
        });
    }
    capture.len.store(len, Ordering::Relaxed);
    capture.skip.store(skip.min(len), Ordering::Relaxed);
    let what = CONTEXT
        .try_with(|ctx| (ctx.queue.get(), ctx.activity.get()))
        .unwrap_or(("", Activity::Unspecified));
    // SAFETY: see `impl Sync for Capture`.
    unsafe { *capture.what.get() = what };
    capture.state.store(CAPTURED, Ordering::Release);
}

fn watch_forever(tick: Duration) {
    loop {
        std::thread::sleep(tick);
        let watches: Vec<Arc<PollWatch>> = match registry().lock() {
            Ok(watches) => watches.iter().filter_map(Weak::upgrade).collect(),
            Err(_) => return,
        };
        let now = nanos_since_base(Instant::now());
        for watch in watches {
            check(&watch, now);
        }
    }
}

/// Reports `watch`'s running poll if it passed its next report point.
fn check(watch: &PollWatch, now: u64) {
    let since = watch.running_since.load(Ordering::Acquire) & !MARKS;
    if since == 0 {
        return;
    }
    let ran = now.saturating_sub(since);
    let done = if watch.considered_poll.load(Ordering::Acquire) == since {
        watch.reports.load(Ordering::Relaxed)
    } else {
        0
    };
    let due = watch.threshold_ns.saturating_mul(1 << done.min(40));
    if ran < due {
        return;
    }
    watch.reports.store(done + 1, Ordering::Relaxed);
    watch.considered_poll.store(since, Ordering::Relaxed);
    let decision = match watch.limiter.lock() {
        Ok(mut limiter) => limiter.decide(Instant::now()),
        Err(_) => return,
    };
    if decision == Decision::Suppress {
        if watch.mark(since, SUPPRESSED) {
            watch.suppressed.inc();
        }
        return;
    }
    let captured = capture(watch);
    // Reported only if still running now: otherwise its end reports it (and the stack may be
    // of what ran next).
    if !watch.mark(since, REPORTED) {
        return;
    }
    watch.reported.inc();
    let ms = ran / 1_000_000;
    match captured {
        Some((queue, activity, frames)) => tracing::warn!(
            "Reactor stalled for {ms} ms on shard {} and still running, in task queue {queue}, \
             while {activity}; backtrace:\n{frames}",
            watch.shard
        ),
        None => tracing::warn!(
            "Reactor stalled for {ms} ms on shard {} and still running (no backtrace: the \
             thread did not answer {CAPTURE_SIGNAL} within {} ms)",
            watch.shard,
            CAPTURE_WAIT.as_millis()
        ),
    }
}

/// Signals the shard thread and waits for its stack; `None` if it does not answer in time.
fn capture(watch: &PollWatch) -> Option<(&'static str, Activity, String)> {
    let capture = &watch.capture;
    capture.state.store(REQUESTED, Ordering::Release);
    // SAFETY: `thread` is a live shard thread (its watch is alive: the monitor holds it).
    let sent = unsafe { libc::pthread_kill(watch.thread, capture_signal()) } == 0;
    let deadline = Instant::now() + CAPTURE_WAIT;
    let mut answered = false;
    while sent && Instant::now() < deadline {
        if capture.state.load(Ordering::Acquire) == CAPTURED {
            answered = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    if !answered {
        // A late handler finds IDLE and does nothing.
        capture.state.store(IDLE, Ordering::Release);
        return None;
    }
    // SAFETY: CAPTURED was observed with Acquire (see `impl Sync for Capture`).
    let (queue, activity) = unsafe { *capture.what.get() };
    let len = capture.len.load(Ordering::Relaxed).min(MAX_FRAMES);
    let skip = capture.skip.load(Ordering::Relaxed).min(len);
    let frames = symbolise(&capture.frames[skip..len]);
    capture.state.store(IDLE, Ordering::Release);
    Some((queue, activity, frames))
}

/// One line per frame, as Seastar prints them: `  N: module+0xOFFSET (symbol)`, the offset
/// from the module's load address (decode with `addr2line -Cfie <module> 0xOFFSET`), the
/// symbol when the module exports it (libc's do). Symbolising in the server would read the
/// binary's debug information: ~100 MB of memory and about a second for a release build with
/// debug info.
fn symbolise(frames: &[AtomicUsize]) -> String {
    let mut out = String::new();
    let ips = frames.iter().map(|f| f.load(Ordering::Relaxed));
    for (n, ip) in ips.take_while(|&ip| ip != 0).enumerate() {
        out.push_str(&format!("  {n}: {}\n", describe(ip)));
    }
    out
}

fn describe(ip: usize) -> String {
    // SAFETY: a zeroed Dl_info is valid; dladdr only reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let found = unsafe { libc::dladdr(ip as *const libc::c_void, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return format!("{ip:#x}");
    }
    // SAFETY: dladdr returned non-null, NUL-terminated strings owned by the loader.
    let module = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let module = module.rsplit('/').next().unwrap_or_default().to_string();
    let offset = ip.wrapping_sub(info.dli_fbase as usize);
    let symbol = (!info.dli_sname.is_null()).then(|| {
        unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }
            .to_string_lossy()
            .into_owned()
    });
    match symbol {
        Some(name) => format!("{module}+{offset:#x} ({name})"),
        None => format!("{module}+{offset:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_a_quarter_of_the_threshold_within_bounds() {
        assert_eq!(tick(Duration::from_millis(25)), Duration::from_micros(6250));
        assert_eq!(tick(Duration::from_millis(4)), Duration::from_millis(5));
        assert_eq!(tick(Duration::from_secs(1)), Duration::from_millis(50));
    }

    #[test]
    fn instants_map_to_increasing_nonzero_nanoseconds() {
        let a = Instant::now();
        let b = a + Duration::from_millis(3);
        let (na, nb) = (nanos_since_base(a), nanos_since_base(b));
        assert!(na > 0);
        assert_eq!(nb - na, 3_000_000);
    }
}
