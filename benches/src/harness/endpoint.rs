//! How clients reach a server under test.

use std::path::PathBuf;

/// A server's client endpoint on 127.0.0.1 and the credentials of the benchmark user.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// CA file to verify the server's certificate; `None` for plain TCP.
    pub tls_ca: Option<PathBuf>,
    /// ACL user.
    pub user: String,
    /// Its password.
    pub password: String,
}
