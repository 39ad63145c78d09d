//! Whether the client has gone, asked of the kernel without reading from the socket.
//!
//! A login waits for a slot (`--max-concurrent-logins`) before its password is hashed; a
//! client that gave up meanwhile (a client-side timeout, then a reconnect) must not cost a
//! hash. The check is one non-blocking `poll(2)` for `POLLRDHUP` on the raw TCP socket:
//!
//! - FIN received (`POLLRDHUP`), connection reset or socket error (`POLLHUP`, `POLLERR`):
//!   gone. Under TLS a closing client sends close_notify and then FIN; the FIN decides, even
//!   with the close_notify (or pipelined requests) still unread. A client that only
//!   half-closes its sending side counts as gone too, as in Redis, which frees a client on
//!   read EOF.
//! - Anything else, unread data included: still there.

use std::os::fd::RawFd;

/// True when the peer of TCP socket `fd` has closed or reset the connection (see the
/// module docs). `fd` must be an open socket; a failing `poll` counts as still there.
pub fn peer_closed(fd: RawFd) -> bool {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd and a zero timeout: poll only reads the socket's state.
    let ready = unsafe { libc::poll(&mut pollfd, 1, 0) };
    ready > 0 && pollfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        (client, server)
    }

    fn wait_until(mut condition: impl FnMut() -> bool) -> bool {
        (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            condition()
        })
    }

    #[test]
    fn open_connections_with_or_without_unread_data_are_not_closed() {
        let (mut client, server) = pair();
        assert!(!peer_closed(server.as_raw_fd()));
        client.write_all(b"*1\r\n$4\r\nPING\r\n").expect("write");
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!peer_closed(server.as_raw_fd()));
    }

    #[test]
    fn fin_is_seen_even_behind_unread_data() {
        let (mut client, server) = pair();
        client.write_all(b"close_notify stand-in").expect("write");
        client.shutdown(Shutdown::Write).expect("shutdown");
        assert!(wait_until(|| peer_closed(server.as_raw_fd())));
    }

    #[test]
    fn a_dropped_client_is_closed() {
        let (client, server) = pair();
        drop(client);
        assert!(wait_until(|| peer_closed(server.as_raw_fd())));
    }
}
