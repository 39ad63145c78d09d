//! Process figures for INFO memory and INFO cpu: heap bytes allocated (counted by the global
//! allocator, [`super::allocated`]), resident set size from `/proc/self/statm`, CPU time from `getrusage(2)`.

use std::time::Duration;

/// Bytes allocated and not freed (Redis `used_memory`): what Rust's global allocator handed
/// out, counted by [`super::allocated::Counting`], so it follows the data both ways (50 MB of
/// SETs raise it by about 50 MB, FLUSHALL brings it back). Without that allocator installed (a
/// unit-test binary): mimalloc's committed memory (`mi_process_info` `current_commit`), which
/// keeps freed pages and so does not fall.
pub fn used_memory() -> u64 {
    if let Some(bytes) = super::allocated::allocated_bytes() {
        return bytes;
    }
    let mut committed: usize = 0;
    // SAFETY: mi_process_info writes only through the pointers it is given and skips null ones.
    unsafe {
        libmimalloc_sys::mi_process_info(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut committed,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
    }
    committed as u64
}

/// Resident set size in bytes (Redis `used_memory_rss`), 0 when `/proc` cannot be read.
pub fn rss_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// Total RAM in bytes (Redis `total_system_memory`).
pub fn total_system_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    u64::try_from(pages).unwrap_or(0) * u64::try_from(page).unwrap_or(0)
}

/// System and user CPU time.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuTimes {
    /// In the kernel.
    pub sys: Duration,
    /// In user space.
    pub user: Duration,
}

/// `getrusage(who)`: `RUSAGE_SELF`, `RUSAGE_CHILDREN` or `RUSAGE_THREAD`.
pub fn cpu_times(who: libc::c_int) -> CpuTimes {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: the buffer is a valid rusage; getrusage writes it or fails.
    let usage = unsafe {
        if libc::getrusage(who, usage.as_mut_ptr()) != 0 {
            return CpuTimes::default();
        }
        usage.assume_init()
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    CpuTimes {
        sys: time(usage.ru_stime),
        user: time(usage.ru_utime),
    }
}

/// Redis `bytesToHuman`: `1.50K`, `2.00M`, or plain bytes `B` below 1 KiB.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["K", "M", "G", "T", "P"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2}{}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human() {
        assert_eq!(human_bytes(1000), "1000B");
        assert_eq!(human_bytes(1536), "1.50K");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.00M");
    }

    #[test]
    fn figures_are_plausible() {
        let v = vec![0u8; 1 << 20];
        assert!(used_memory() >= v.len() as u64);
        assert!(rss_bytes() > 0);
        assert!(total_system_memory() > 0);
        drop(v);
    }
}
