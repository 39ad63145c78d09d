//! Clients that close their connection right after sending a request are closed by the
//! server too: none stays in CLIENT LIST holding a descriptor and a `--maxclients` place.

mod common;

use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::Server;

const THREADS: usize = 16;
const CONNECTIONS_PER_THREAD: usize = 6;

#[derive(Clone, Copy, Debug)]
enum Close {
    /// An orderly TCP close (FIN), no TLS close_notify.
    Fin,
    /// A reset (SO_LINGER 0): the kernel sends RST.
    Rst,
}

/// AUTH with a 16384-byte password: more than one TLS record (16384 bytes of plaintext), so
/// the server reads it in two parts.
fn two_record_request() -> Vec<u8> {
    common::encode_command(&[b"AUTH", b"default", &[b'L'; 16384]])
}

fn send_and_close(server: &Server, how: Close) {
    let barrier = Arc::new(Barrier::new(THREADS));
    let request = Arc::new(two_record_request());
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            let (barrier, request) = (barrier.clone(), request.clone());
            scope.spawn(move || {
                for _ in 0..CONNECTIONS_PER_THREAD {
                    let mut tls = common::tls_stream(server);
                    barrier.wait();
                    tls.write_all(&request).expect("request sent");
                    if let Close::Rst = how {
                        let linger = libc::linger {
                            l_onoff: 1,
                            l_linger: 0,
                        };
                        // SAFETY: a valid socket and a correctly sized SO_LINGER value.
                        let rc = unsafe {
                            libc::setsockopt(
                                tls.get_ref().as_raw_fd(),
                                libc::SOL_SOCKET,
                                libc::SO_LINGER,
                                (&linger as *const libc::linger).cast(),
                                std::mem::size_of::<libc::linger>() as libc::socklen_t,
                            )
                        };
                        assert_eq!(rc, 0, "SO_LINGER");
                    }
                    drop(tls);
                }
            });
        }
    });
}

#[test]
fn clients_that_close_after_a_two_record_request_are_closed_by_the_server() {
    let server = Server::start(&["--smp", "2"]);
    for how in [Close::Fin, Close::Rst] {
        send_and_close(&server, how);
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut active = f64::NAN;
        while Instant::now() < deadline {
            active = server.metric("shardline_connections_active", &[]);
            if active == 0.0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(active, 0.0, "{how:?}: connections left open by the server");
    }
    let accepted = server.metric("shardline_connections_accepted_total", &[]);
    assert_eq!(accepted, (2 * THREADS * CONNECTIONS_PER_THREAD) as f64);
}
