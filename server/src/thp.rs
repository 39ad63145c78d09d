//! Transparent huge pages off for the whole process (Redis's `disable-thp`, default yes).
//!
//! mimalloc asks the kernel for transparent huge pages on the memory it maps
//! (`madvise(MADV_HUGEPAGE)`), so the first write to a fresh 2 MiB region makes one page
//! fault zero all 2 MiB, inside whatever task touched it. A keyspace growing by a few
//! hundred thousand keys touches such regions as it goes, and on a virtual machine whose
//! memory the host backs lazily each of those faults was 6 ms of a shard's CPU: a reactor
//! stall per 2 MiB (`benches/README.md`, "Unpipelined requests: one multishot poll per
//! connection"). With 4 KiB pages the same zeroing comes in pieces of 4 KiB. Redis disables
//! THP for its own process by default for the latency it costs (`disable-thp yes`, Redis 6.2).

use std::io;

/// `--disable-thp`: whether the process asks the kernel to back its memory with transparent
/// huge pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DisableThp {
    /// `prctl(PR_SET_THP_DISABLE)` at start: 4 KiB pages only, whatever `madvise` says.
    Yes,
    /// Leave the kernel's and the allocator's choice (`/sys/kernel/mm/transparent_hugepage`).
    No,
}

/// Turns transparent huge pages off for this process and the threads it starts
/// (`prctl(2)` `PR_SET_THP_DISABLE`, Linux 3.15).
///
/// # Errors
/// The OS error of `prctl`.
pub fn disable_for_process() -> io::Result<()> {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and touches no memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether transparent huge pages are disabled for this process (`PR_GET_THP_DISABLE`).
    fn disabled_for_process() -> io::Result<bool> {
        // SAFETY: PR_GET_THP_DISABLE takes no pointer and returns the flag.
        let rc = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc == 1)
        }
    }

    #[test]
    fn disabling_is_seen_by_the_process() {
        disable_for_process().expect("prctl(PR_SET_THP_DISABLE)");
        assert!(disabled_for_process().expect("prctl(PR_GET_THP_DISABLE)"));
    }
}
