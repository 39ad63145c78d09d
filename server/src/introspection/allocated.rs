//! Bytes allocated through Rust's global allocator and not yet freed (INFO `used_memory`, as
//! Redis counts what `zmalloc` handed out): [`Counting`] wraps the real allocator and adds
//! each allocation's size to a counter of the allocating thread, subtracting it in the freeing
//! thread.
//!
//! Cost on the hot path: a thread-local read (the thread's slot index) and a plain load and
//! store on the thread's own cache line: no shared atomic read-modify-write, no contention
//! between shards. Memory freed by another thread than the one that allocated it (a forwarded
//! command's arguments) is subtracted from the freeing thread's counter: counters can go
//! negative, their sum is right. The first [`SLOTS`] threads get a slot of their own, later ones
//! share one atomic counter. C allocations (OpenSSL's, through mimalloc's `malloc`) do not
//! pass through Rust's allocator and are not counted, as Redis does not count libc's `malloc`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

/// Threads with a counter of their own (shards, helpers); the rest share one.
pub const SLOTS: usize = 256;

/// One thread's counter, alone on its cache line.
#[repr(align(64))]
struct Slot(AtomicI64);

static COUNTERS: [Slot; SLOTS] = [const { Slot(AtomicI64::new(0)) }; SLOTS];
/// The counter of the threads past [`SLOTS`], updated with atomic adds.
static SHARED: Slot = Slot(AtomicI64::new(0));
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
/// Whether the process's global allocator is a [`Counting`] one ([`mark_installed`]).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// No slot taken yet.
const UNSET: usize = usize::MAX;

thread_local! {
    // Const-initialised, no destructor: reading it never allocates (this runs inside the
    // allocator).
    static MY_SLOT: Cell<usize> = const { Cell::new(UNSET) };
}

/// Adds `delta` bytes to the calling thread's counter.
#[inline]
fn count(delta: i64) {
    let slot = MY_SLOT
        .try_with(|cell| {
            let mut slot = cell.get();
            if slot == UNSET {
                slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
                cell.set(slot);
            }
            slot
        })
        .unwrap_or(UNSET);
    match COUNTERS.get(slot) {
        // Only this thread writes its slot: a load and a store, not a locked add.
        Some(own) => own
            .0
            .store(own.0.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
        None => {
            SHARED.0.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

/// Says that the global allocator is a [`Counting`] one, so that [`allocated_bytes`] is the
/// whole process's figure (called by `main` before anything else).
pub fn mark_installed() {
    INSTALLED.store(true, Ordering::Relaxed);
}

/// Bytes allocated and not freed by every thread together, or `None` unless
/// [`mark_installed`] said the global allocator counts (a unit-test binary does not).
pub fn allocated_bytes() -> Option<u64> {
    INSTALLED
        .load(Ordering::Relaxed)
        .then(|| counted_bytes().max(0) as u64)
}

/// The sum of every thread's counter: what [`Counting`] allocators handed out and was not
/// freed (negative while frees of memory allocated before counting started outweigh it).
pub fn counted_bytes() -> i64 {
    let used = NEXT_SLOT.load(Ordering::Relaxed).min(SLOTS);
    let total: i64 = COUNTERS[..used]
        .iter()
        .map(|slot| slot.0.load(Ordering::Relaxed))
        .sum::<i64>()
        + SHARED.0.load(Ordering::Relaxed);
    total
}

/// A global allocator that counts the bytes `A` hands out (see the module).
pub struct Counting<A>(pub A);

// SAFETY: every call is forwarded to `A` unchanged; the counting touches no allocation.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `A`'s.
        let ptr = unsafe { self.0.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { self.0.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as `alloc`.
        unsafe { self.0.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `alloc`.
        let new = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counting itself, called directly (the unit-test binary keeps the system allocator).
    #[test]
    fn counts_allocations_frees_and_reallocs_across_threads() {
        let a = Counting(std::alloc::System);
        let layout = Layout::from_size_align(1 << 20, 8).expect("layout");
        let before = counted_bytes();
        // SAFETY: a valid layout; the block is freed with the layout it was last sized to.
        let ptr = unsafe { a.alloc(layout) } as usize;
        assert_eq!(counted_bytes() - before, 1 << 20);
        // SAFETY: as above.
        let ptr = unsafe { a.realloc(ptr as *mut u8, layout, 3 << 20) } as usize;
        assert_eq!(counted_bytes() - before, 3 << 20);
        // Freed by another thread: its counter goes negative, the sum back to the start.
        std::thread::spawn(move || {
            let big = Layout::from_size_align(3 << 20, 8).expect("layout");
            // SAFETY: the block from realloc above, with its layout.
            unsafe { Counting(std::alloc::System).dealloc(ptr as *mut u8, big) };
        })
        .join()
        .expect("thread");
        assert_eq!(counted_bytes(), before);
    }
}
