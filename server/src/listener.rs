//! Per-shard listening sockets.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};

use socket2::{Domain, Protocol, Socket, Type};

/// Binds one non-blocking TCP listening socket per shard on `addr`, all with SO_REUSEPORT and
/// the given listen(2) `backlog`, so the kernel spreads new connections across shards with no
/// shared accept lock. (glommio's own `TcpListener::bind` fixes the backlog at 1024.)
///
/// Port 0 picks one ephemeral port, shared by every shard's socket. Returns the sockets and the
/// bound address. Errors: socket, setsockopt, bind or listen failures, e.g. `AddrInUse`.
pub fn bind_reuseport(
    addr: SocketAddr,
    backlog: i32,
    shards: usize,
) -> io::Result<(Vec<Socket>, SocketAddr)> {
    // SO_REUSEPORT would let a second shardline (same user) share a port that is already in
    // use and silently take half its clients: bind once without it first, so a taken port is
    // `AddrInUse` as for any server. Port 0 picks the ephemeral port all shards then share.
    let probe = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    probe.set_reuse_address(true)?;
    if addr.is_ipv6() {
        probe.set_only_v6(true)?;
    }
    probe.bind(&addr.into())?;
    let mut bound = probe.local_addr()?.as_socket().unwrap_or(addr);
    drop(probe);
    let mut sockets = Vec::with_capacity(shards);
    for _ in 0..shards {
        let socket = Socket::new(
            Domain::for_address(bound),
            Type::STREAM,
            Some(Protocol::TCP),
        )?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        if bound.is_ipv6() {
            socket.set_only_v6(true)?;
        }
        socket.set_nonblocking(true)?;
        socket.bind(&bound.into())?;
        socket.listen(backlog)?;
        if let Some(local) = socket.local_addr()?.as_socket() {
            bound = local;
        }
        sockets.push(socket);
    }
    Ok((sockets, bound))
}

/// Hands a socket from [`bind_reuseport`] to glommio; call on the shard that will accept on it.
pub fn into_glommio(socket: Socket) -> glommio::net::TcpListener {
    // SAFETY: the descriptor is a bound, listening TCP socket whose ownership moves to glommio.
    unsafe { glommio::net::TcpListener::from_raw_fd(socket.into_raw_fd()) }
}
