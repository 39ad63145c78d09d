//! One client connection: TCP connect with time-out, optional TLS handshake (openssl), AUTH.

use std::fmt;
use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod, SslStream, SslVerifyMode};
use serde::{Deserialize, Serialize};

use super::{LoadError, Target};
use crate::resp::{self, Reply};

/// The step of a connection's life at which something failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// TCP connect.
    Connect,
    /// TLS handshake.
    Tls,
    /// The AUTH round trip (I/O error or error reply).
    Auth,
    /// The command round trip after AUTH.
    Command,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Connect => "TCP connect",
            Stage::Tls => "TLS handshake",
            Stage::Auth => "AUTH",
            Stage::Command => "command",
        })
    }
}

/// Opens connections to one [`Target`]; cheap to share between threads.
pub struct Connector {
    target: Target,
    tls: Option<SslConnector>,
    auth_request: Option<Vec<u8>>,
}

impl Connector {
    /// Checks the target and builds the TLS context (CA file loaded once).
    ///
    /// # Errors
    /// [`LoadError::NotLoopback`] for a non-loopback address, [`LoadError::TlsSetup`] when the
    /// CA file cannot be loaded.
    pub fn new(target: Target) -> Result<Connector, LoadError> {
        if !target.addr.ip().is_loopback() {
            return Err(LoadError::NotLoopback(target.addr));
        }
        let tls = match &target.tls {
            None => None,
            Some(tls) => {
                let mut builder = SslConnector::builder(SslMethod::tls_client())?;
                builder.set_ca_file(&tls.ca_file)?;
                builder.set_verify(SslVerifyMode::PEER);
                Some(builder.build())
            }
        };
        let auth_request = target.credentials.as_ref().map(|c| {
            let mut buf = Vec::new();
            resp::encode_command(&mut buf, &["AUTH", c.user.as_str(), c.password.as_str()]);
            buf
        });
        Ok(Connector {
            target,
            tls,
            auth_request,
        })
    }

    /// The target this connector opens connections to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Opens a new connection: TCP connect, then a full TLS handshake when TLS is on (no
    /// session resumption: every `Ssl` is new). Does not authenticate.
    ///
    /// # Errors
    /// [`LoadError::Connection`] with stage `Connect` or `Tls`.
    pub fn open(&self) -> Result<Conn, LoadError> {
        self.open_by(None)
    }

    /// [`Connector::open`], giving up at `deadline` if one is given: the connect time-out and
    /// the socket's read and write time-outs during the handshake are cut to what is left
    /// (each handshake read waits at most what was left when the handshake began).
    ///
    /// # Errors
    /// As [`Connector::open`]; a deadline reached is a time-out error (`TimedOut` or
    /// `WouldBlock`) at stage `Connect` or `Tls`.
    pub fn open_by(&self, deadline: Option<Instant>) -> Result<Conn, LoadError> {
        let fail = |stage| move |source| LoadError::Connection { stage, source };
        let left = |limit: Duration| match deadline {
            None => Ok(limit),
            Some(at) => match at.saturating_duration_since(Instant::now()) {
                left if left.is_zero() => Err(io::Error::from(io::ErrorKind::TimedOut)),
                left => Ok(left.min(limit)),
            },
        };
        let connect_timeout = left(self.target.connect_timeout).map_err(fail(Stage::Connect))?;
        let tcp = TcpStream::connect_timeout(&self.target.addr, connect_timeout)
            .map_err(fail(Stage::Connect))?;
        tcp.set_nodelay(true).map_err(fail(Stage::Connect))?;
        let io_timeout = left(self.target.io_timeout).map_err(fail(Stage::Tls))?;
        tcp.set_read_timeout(Some(io_timeout))
            .map_err(fail(Stage::Connect))?;
        tcp.set_write_timeout(Some(io_timeout))
            .map_err(fail(Stage::Connect))?;
        let stream = match (&self.tls, &self.target.tls) {
            (Some(connector), Some(settings)) => {
                let ssl = connector
                    .configure()
                    .and_then(|c| c.into_ssl(&settings.server_name))
                    .map_err(|e| LoadError::Connection {
                        stage: Stage::Tls,
                        source: io::Error::other(e),
                    })?;
                let stream = SslStream::new(ssl, tcp).map_err(|e| LoadError::Connection {
                    stage: Stage::Tls,
                    source: io::Error::other(e),
                })?;
                let mut stream = stream;
                stream.connect().map_err(|e| LoadError::Connection {
                    stage: Stage::Tls,
                    source: e
                        .into_io_error()
                        .unwrap_or_else(|e| io::Error::other(e.to_string())),
                })?;
                Stream::Tls(Box::new(stream))
            }
            _ => Stream::Plain(tcp),
        };
        Ok(Conn {
            io: BufReader::with_capacity(16 * 1024, stream),
        })
    }

    /// Opens a connection and authenticates it (when credentials are set) in one round trip.
    ///
    /// # Errors
    /// Any [`Connector::open`] error, or stage `Auth` for an I/O error or error reply.
    pub fn open_authenticated(&self) -> Result<Conn, LoadError> {
        let mut conn = self.open()?;
        if let Some(auth) = &self.auth_request {
            conn.round_trip(auth, 1, Stage::Auth)?;
        }
        Ok(conn)
    }

    /// The encoded AUTH request, if credentials are set.
    pub fn auth_request(&self) -> Option<&[u8]> {
        self.auth_request.as_deref()
    }
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<SslStream<TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// An open connection.
pub struct Conn {
    io: BufReader<Stream>,
}

impl Conn {
    /// Sets the read and write time-outs of the underlying socket, e.g. to what is left of a
    /// request's deadline.
    ///
    /// # Errors
    /// The `setsockopt` error (e.g. a zero duration).
    pub fn set_timeouts(&self, timeout: Duration) -> io::Result<()> {
        let tcp = match self.io.get_ref() {
            Stream::Plain(tcp) => tcp,
            Stream::Tls(tls) => tls.get_ref(),
        };
        tcp.set_read_timeout(Some(timeout))?;
        tcp.set_write_timeout(Some(timeout))
    }

    /// Writes `request` (one or more encoded commands) and reads `replies` replies.
    ///
    /// # Errors
    /// [`LoadError::Connection`] at `stage` for I/O errors, [`LoadError::Reply`] when any
    /// reply is an error reply.
    pub fn round_trip(
        &mut self,
        request: &[u8],
        replies: usize,
        stage: Stage,
    ) -> Result<Vec<Reply>, LoadError> {
        let (out, _) = self.round_trip_raw(request, replies, stage)?;
        match out.iter().find_map(Reply::as_error) {
            Some(err) => Err(LoadError::Reply(err.to_owned())),
            None => Ok(out),
        }
    }

    /// Writes `request` and reads `replies` replies, error replies included, also returning
    /// when the first reply was complete.
    ///
    /// # Errors
    /// [`LoadError::Connection`] at `stage` for I/O errors.
    pub fn round_trip_raw(
        &mut self,
        request: &[u8],
        replies: usize,
        stage: Stage,
    ) -> Result<(Vec<Reply>, Instant), LoadError> {
        let io_err = |source| LoadError::Connection { stage, source };
        let stream = self.io.get_mut();
        stream.write_all(request).map_err(io_err)?;
        stream.flush().map_err(io_err)?;
        let mut out = Vec::with_capacity(replies);
        let mut first = None;
        for _ in 0..replies {
            out.push(resp::read_reply(&mut self.io).map_err(io_err)?);
            first.get_or_insert_with(Instant::now);
        }
        Ok((out, first.unwrap_or_else(Instant::now)))
    }

    /// Writes `request` (one or more encoded commands) without reading anything.
    ///
    /// # Errors
    /// The I/O error of the write.
    pub fn send(&mut self, request: &[u8]) -> io::Result<()> {
        let stream = self.io.get_mut();
        stream.write_all(request)?;
        stream.flush()
    }

    /// Reads one reply (or a message pushed by the server, e.g. to a subscriber).
    ///
    /// # Errors
    /// As [`resp::read_reply`]: I/O errors (time-outs included) and malformed replies.
    pub fn read_reply(&mut self) -> io::Result<Reply> {
        resp::read_reply(&mut self.io)
    }
}
