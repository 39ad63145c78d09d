//! Whether the client has gone, asked of the kernel without reading from the socket.
//!
//! A login waits for a slot (`--max-concurrent-logins`) before its password is hashed; a
//! client that gave up meanwhile (a client-side timeout, then a reconnect) must not cost a
//! hash. One non-blocking `poll(2)` on the raw TCP socket tells three states apart
//! ([`peer_state`]):
//!
//! - [`PeerState::Reset`] (`POLLHUP` or `POLLERR`): the client's kernel answered with a RST,
//!   or the socket failed. Nothing sent to the client can arrive any more: gone.
//! - [`PeerState::Finished`] (`POLLRDHUP` alone): a FIN arrived. That is either a client that
//!   closed its socket or one that only shut down its sending side (`shutdown(SHUT_WR)`) and
//!   still reads its replies, as Redis serves it. The two look the same until something is
//!   sent: a closed socket answers new data with a RST, a half-closed one accepts it. Under
//!   TLS a closing client sends close_notify and then FIN; the FIN is seen even with the
//!   close_notify (or pipelined requests) still unread. The login path tells the two apart
//!   with a probe record ([`super::probe`]).
//! - [`PeerState::Open`]: anything else, unread data included.
//!
//! [`smoothed_rtt`] reads the connection's round-trip time (`TCP_INFO`), which says how long
//! a probe's RST takes to come back.

use std::os::fd::RawFd;
use std::time::Duration;

/// What the kernel knows about the client's side of a TCP connection (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    /// No FIN, no RST.
    Open,
    /// A FIN arrived: closed or only half-closed.
    Finished,
    /// A RST arrived or the socket failed: gone.
    Reset,
}

/// The state of the peer of TCP socket `fd` (see the module docs). `fd` must be an open
/// socket; a failing `poll` counts as [`PeerState::Open`].
pub fn peer_state(fd: RawFd) -> PeerState {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd and a zero timeout: poll only reads the socket's state.
    let ready = unsafe { libc::poll(&mut pollfd, 1, 0) };
    if ready <= 0 {
        PeerState::Open
    } else if pollfd.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
        PeerState::Reset
    } else if pollfd.revents & libc::POLLRDHUP != 0 {
        PeerState::Finished
    } else {
        PeerState::Open
    }
}

/// True when the peer of TCP socket `fd` has sent a FIN or reset the connection. For a
/// ClientHello that waits for a login slot this means gone either way: a client that sent
/// FIN can no longer send the Finished message its handshake needs.
pub fn peer_closed(fd: RawFd) -> bool {
    peer_state(fd) != PeerState::Open
}

/// The kernel's smoothed round-trip time of TCP socket `fd` (`TCP_INFO`'s `tcpi_rtt`), or
/// `None` when it cannot be read.
pub fn smoothed_rtt(fd: RawFd) -> Option<Duration> {
    // SAFETY: tcp_info is plain old data; all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: a valid buffer of `len` bytes for getsockopt to fill.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then(|| Duration::from_micros(u64::from(info.tcpi_rtt)))
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
    fn a_half_close_and_a_close_look_the_same_until_data_is_sent() {
        let (half, half_server) = pair();
        half.shutdown(Shutdown::Write).expect("shutdown");
        let (closed, mut closed_server) = pair();
        drop(closed);
        for fd in [half_server.as_raw_fd(), closed_server.as_raw_fd()] {
            assert!(wait_until(|| peer_state(fd) == PeerState::Finished));
        }
        let mut half_server = half_server;
        half_server.write_all(b"probe").expect("write");
        closed_server.write_all(b"probe").expect("write");
        assert!(wait_until(
            || peer_state(closed_server.as_raw_fd()) == PeerState::Reset
        ));
        assert_eq!(peer_state(half_server.as_raw_fd()), PeerState::Finished);
        assert!(smoothed_rtt(half_server.as_raw_fd()).is_some());
    }

    #[test]
    fn a_client_that_closes_with_unread_data_resets() {
        let (client, mut server) = pair();
        server.write_all(b"unread").expect("write");
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(client);
        assert!(wait_until(
            || peer_state(server.as_raw_fd()) == PeerState::Reset
        ));
    }

    #[test]
    fn a_dropped_client_is_closed() {
        let (client, server) = pair();
        drop(client);
        assert!(wait_until(|| peer_closed(server.as_raw_fd())));
    }
}
