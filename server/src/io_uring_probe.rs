//! Checks at start that this process may use io_uring, and says why not when it may not.
//!
//! Every shard's reactor is a glommio executor over io_uring rings. When the kernel refuses
//! `io_uring_setup(2)`, glommio panics with a message about the kernel version, whatever the
//! cause. The usual causes are a container runtime's seccomp profile (Docker 25+ and
//! containerd 2 deny the io_uring system calls in their default profiles) and the sysctl
//! `kernel.io_uring_disabled` (Linux 6.6); so the server tries one tiny ring first and names
//! them.

use std::io;

/// The size of `struct io_uring_params` (`<linux/io_uring.h>`): 120 bytes.
const IO_URING_PARAMS_BYTES: usize = 120;

/// Sets up and closes a one-entry ring.
///
/// # Errors
/// A message naming the OS error of `io_uring_setup` and its likely cause ([`explain`]).
pub fn check() -> Result<(), String> {
    let mut params = [0u8; IO_URING_PARAMS_BYTES];
    // SAFETY: io_uring_setup(entries, params) writes at most sizeof(struct io_uring_params)
    // bytes into `params`, which is that large and lives across the call.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
    if fd < 0 {
        return Err(explain(&io::Error::last_os_error()));
    }
    // SAFETY: `fd` is the ring descriptor just returned to us and closed only here.
    unsafe { libc::close(fd as libc::c_int) };
    Ok(())
}

/// What an `io_uring_setup` failure most likely means, for the start-up error.
pub fn explain(err: &io::Error) -> String {
    let cause = match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "io_uring is blocked: by a seccomp profile (Docker 25+ and containerd 2 deny \
             io_uring_setup, io_uring_enter and io_uring_register by default: run with a \
             profile that allows them, see deploy/container/README.md), or by the sysctl \
             kernel.io_uring_disabled (2 disables it, 1 allows it only to the group in \
             kernel.io_uring_group)"
        }
        Some(libc::ENOSYS) => {
            "the kernel has no io_uring (Linux 5.8 or newer with CONFIG_IO_URING is needed), \
             or a seccomp profile answers ENOSYS for it"
        }
        Some(libc::ENOMEM) => {
            "the locked-memory limit is too low for the ring: raise it (`ulimit -l`, \
             LimitMEMLOCK= in systemd, --ulimit memlock=-1 for containers)"
        }
        _ => "io_uring is unavailable to this process",
    };
    format!("cannot use io_uring (io_uring_setup: {err}): {cause}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_names_its_likely_cause() {
        let eperm = explain(&io::Error::from_raw_os_error(libc::EPERM));
        assert!(eperm.starts_with("cannot use io_uring (io_uring_setup: Operation not permitted"));
        assert!(eperm.contains("seccomp") && eperm.contains("kernel.io_uring_disabled"));
        let enosys = explain(&io::Error::from_raw_os_error(libc::ENOSYS));
        assert!(enosys.contains("Linux 5.8 or newer"), "{enosys}");
        let enomem = explain(&io::Error::from_raw_os_error(libc::ENOMEM));
        assert!(enomem.contains("ulimit -l"), "{enomem}");
    }

    #[test]
    fn a_ring_can_be_set_up_on_the_test_machine() {
        assert_eq!(check(), Ok(()));
    }
}
