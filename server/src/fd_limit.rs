//! RLIMIT_NOFILE at start-up, as Redis 7 does (`adjustOpenFilesLimit`, server.c): raise the
//! soft limit so that `--maxclients` clients fit next to the descriptors the server needs for
//! itself, as far as the hard limit (and `fs.nr_open`) allow; when they do not fit, lower
//! maxclients with a warning instead of failing at accept time.

use rlimit::Resource;

/// Descriptors kept for everything but clients and shards: stdio, the log, the data
/// directory's lock, the users file on reload, the metrics listener and runtime, the signal
/// thread (Redis's
/// `CONFIG_MIN_RESERVED_FDS`).
pub const RESERVED_FDS: u64 = 32;

/// Descriptors set aside per shard: its listening socket, glommio's three io_uring rings and
/// eventfds, and the spare descriptor of its accept loop ([`crate::accept`]), with room to
/// spare.
pub const FDS_PER_SHARD: u64 = 8;

/// The descriptor budget in force after [`adjust_open_files_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdBudget {
    /// Soft RLIMIT_NOFILE before start-up.
    pub previous: u64,
    /// Soft RLIMIT_NOFILE now.
    pub limit: u64,
    /// Hard RLIMIT_NOFILE (`u64::MAX` = unlimited).
    pub hard: u64,
    /// Descriptors set aside for the server itself ([`reserved_fds`]).
    pub reserved: u64,
    /// The client limit in force: `--maxclients`, or `limit - reserved` when lower.
    pub max_clients: usize,
}

/// Descriptors the server needs besides its clients: [`RESERVED_FDS`], [`FDS_PER_SHARD`] per
/// shard, and one per metrics connection (`--metrics-max-concurrent-scrapes`).
pub fn reserved_fds(shards: usize, metrics_max_concurrent_scrapes: usize) -> u64 {
    RESERVED_FDS + FDS_PER_SHARD * shards as u64 + metrics_max_concurrent_scrapes as u64
}

/// Raises the soft RLIMIT_NOFILE towards `max_clients + reserved` (never lowers it) and
/// returns the budget in force.
///
/// Errors: the limits cannot be read, or the limit in force cannot hold `reserved`
/// descriptors plus one client.
pub fn adjust_open_files_limit(max_clients: usize, reserved: u64) -> Result<FdBudget, String> {
    let (previous, hard) = rlimit::getrlimit(Resource::NOFILE)
        .map_err(|err| format!("cannot read the open files limit (RLIMIT_NOFILE): {err}"))?;
    let wanted = (max_clients as u64).saturating_add(reserved);
    let limit = rlimit::increase_nofile_limit(wanted)
        .or_else(|_| {
            // Above fs.nr_open the kernel refuses even a value under the hard limit.
            let nr_open = rlimit::SysLimits::read()?.nr_open.unwrap_or(previous);
            rlimit::increase_nofile_limit(wanted.min(nr_open))
        })
        .unwrap_or(previous);
    budget(previous, limit, hard, reserved, max_clients)
}

fn budget(
    previous: u64,
    limit: u64,
    hard: u64,
    reserved: u64,
    max_clients: usize,
) -> Result<FdBudget, String> {
    if limit <= reserved {
        return Err(format!(
            "the open files limit ({limit}) is too low: shardline needs at least {} file \
             descriptors ({reserved} for itself with these --smp and \
             --metrics-max-concurrent-scrapes, and one client); raise it with `ulimit -n`, \
             `LimitNOFILE=` in the systemd unit or `--ulimit nofile=` for containers",
            reserved + 1
        ));
    }
    let room = usize::try_from(limit - reserved).unwrap_or(usize::MAX);
    Ok(FdBudget {
        previous,
        limit,
        hard,
        reserved,
        max_clients: max_clients.min(room),
    })
}

/// A limit for a log line: `unlimited` for RLIM_INFINITY.
pub fn show_limit(limit: u64) -> String {
    if limit == u64::MAX {
        "unlimited".into()
    } else {
        limit.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_counts_shards_and_metrics_connections() {
        assert_eq!(reserved_fds(2, 32), 32 + 16 + 32);
        assert_eq!(reserved_fds(1, 1), 41);
    }

    #[test]
    fn maxclients_is_kept_when_it_fits_and_lowered_when_it_does_not() {
        let fits = budget(1024, 10_080, 1 << 20, 80, 10_000).expect("fits");
        assert_eq!(fits.max_clients, 10_000);
        let low = budget(96, 96, 96, 80, 10_000).expect("low");
        assert_eq!(low.max_clients, 16);
        assert_eq!((low.previous, low.limit, low.hard), (96, 96, 96));
    }

    #[test]
    fn a_limit_without_room_for_one_client_is_an_error() {
        let err = budget(80, 80, 80, 80, 10_000).expect_err("no room");
        assert!(err.contains("needs at least 81 file descriptors"), "{err}");
        assert!(err.contains("ulimit -n"), "{err}");
        assert_eq!(budget(81, 81, 81, 80, 10_000).map(|b| b.max_clients), Ok(1));
    }

    #[test]
    fn unlimited_reads_as_a_word() {
        assert_eq!(show_limit(u64::MAX), "unlimited");
        assert_eq!(show_limit(4096), "4096");
    }
}
