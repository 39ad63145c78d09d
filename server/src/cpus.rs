//! Which CPUs the shards may run on.

use std::io;

/// The CPUs in this process's affinity mask (`sched_getaffinity(2)`), ascending.
///
/// glommio's `CpuSet::online()` ignores the mask, so `taskset -c 1 shardline --smp 1` would
/// otherwise pin to CPU 0. Errors: the system call's error.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: `cpu_set_t` is plain data; zeroed is a valid empty set, and the kernel fills at
    // most `size_of::<cpu_set_t>()` bytes.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Picks the CPUs for `smp` shards from `allowed`: the first `smp` of them, or all when `smp`
/// is `None`.
///
/// Errors: `smp` is 0 or larger than the number of allowed CPUs (a shard per CPU, never two).
pub fn shard_cpus(allowed: &[usize], smp: Option<usize>) -> Result<Vec<usize>, String> {
    match smp {
        None => Ok(allowed.to_vec()),
        Some(0) => Err("--smp must be at least 1".into()),
        Some(n) if n > allowed.len() => Err(format!(
            "--smp {n} is larger than the {} CPU(s) this process may run on ({:?}); \
             use at most --smp {} or widen the affinity mask (taskset)",
            allowed.len(),
            allowed,
            allowed.len()
        )),
        Some(n) => Ok(allowed[..n].to_vec()),
    }
}

/// The CPUs left for the threads that are not shards (metrics endpoint, signal handling, the
/// offload hashing pool): the allowed CPUs without a shard, or all allowed CPUs when every one
/// has a shard. Keeping those threads off the shards' CPUs keeps a metrics scrape or an
/// offloaded hash from preempting a shard in the middle of a poll.
pub fn helper_cpus(allowed: &[usize], shards: &[usize]) -> Vec<usize> {
    let spare: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|cpu| !shards.contains(cpu))
        .collect();
    if spare.is_empty() {
        allowed.to_vec()
    } else {
        spare
    }
}

/// Restricts the calling thread to `cpus` (`sched_setaffinity(2)`); threads it spawns later
/// inherit the mask. Errors: the system call's error (e.g. a CPU outside the cpuset).
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET is only called below CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&cpu| cpu < libc::CPU_SETSIZE as usize) {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smp_is_checked_against_the_affinity_mask() {
        assert_eq!(shard_cpus(&[1, 3], None), Ok(vec![1, 3]));
        assert_eq!(shard_cpus(&[1, 3], Some(1)), Ok(vec![1]));
        assert!(shard_cpus(&[1, 3], Some(3))
            .unwrap_err()
            .contains("--smp 3 is larger"));
        assert!(shard_cpus(&[1], Some(0)).is_err());
    }

    #[test]
    fn helper_threads_avoid_shard_cpus_when_there_is_room() {
        assert_eq!(helper_cpus(&[0, 1], &[0]), vec![1]);
        assert_eq!(helper_cpus(&[0, 1, 2, 3], &[0, 1]), vec![2, 3]);
        assert_eq!(helper_cpus(&[0, 1], &[0, 1]), vec![0, 1]);
        assert_eq!(helper_cpus(&[3], &[3]), vec![3]);
    }

    #[test]
    fn affinity_mask_is_not_empty() {
        assert!(!allowed_cpus().expect("sched_getaffinity").is_empty());
    }
}
