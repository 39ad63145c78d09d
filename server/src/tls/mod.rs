//! TLS for client connections, by one of two providers chosen at start (`--tls-provider`):
//! OpenSSL ([`openssl_provider`]: one `SslAcceptor` per shard, shared ticket keys) or rustls
//! ([`rustls_provider`]: one `ServerConfig` for all shards, shared ticketer). Both load the
//! same PEM files, including the development certificate made on first run
//! ([`dev_certificate`]), and follow the same policy: TLS 1.2 and 1.3, AEAD suites,
//! optional client certificates, session tickets that resume on any shard.

mod dev_certificate;
pub mod error_queue;
pub mod openssl_provider;
pub mod rustls_provider;
pub mod rustls_tickets;
mod ticket_callback;
pub mod ticket_keys;

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use openssl::ssl::SslAcceptor;

use crate::config::TlsProvider;
pub use dev_certificate::ensure_dev_certificate;
use rustls_tickets::RustlsTickets;
pub use ticket_keys::TicketKeys;

/// Paths of the PEM files the TLS configuration is built from.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// Certificate chain, leaf first.
    pub cert: PathBuf,
    /// Private key of the leaf certificate.
    pub key: PathBuf,
    /// Optional CA bundle: when set, clients must present a certificate it signed.
    pub client_ca: Option<PathBuf>,
}

/// Errors building the TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// OpenSSL refused a file or a setting; names the file when one is involved.
    #[error("TLS setup failed ({context}): {source}")]
    OpenSsl {
        /// What was being done, e.g. "loading certificate chain /path/cert.pem".
        context: String,
        /// OpenSSL's error queue.
        source: openssl::error::ErrorStack,
    },
    /// rustls (or its PEM parser) refused a file or a setting; names the file when one is
    /// involved.
    #[error("TLS setup failed ({context}): {source}")]
    Rustls {
        /// What was being done, e.g. "loading private key /path/key.pem".
        context: String,
        /// rustls's or the PEM parser's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Writing the generated development certificate failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

fn ossl(context: impl Into<String>) -> impl FnOnce(openssl::error::ErrorStack) -> TlsError {
    let context = context.into();
    move |source| TlsError::OpenSsl { context, source }
}

/// The process-wide TLS setup, from which each shard takes its [`ShardTls`]; `Send + Sync`.
pub struct ServerTls {
    /// The PEM files it was built from.
    pub files: TlsFiles,
    provider: Provider,
}

enum Provider {
    /// Each shard builds its own acceptor from the files; they share the ticket keys.
    Openssl(Arc<TicketKeys>),
    /// All shards serve with this one configuration (and so its one ticketer).
    Rustls {
        config: Arc<rustls::ServerConfig>,
        tickets: Arc<RustlsTickets>,
    },
}

/// One shard's TLS acceptor.
pub enum ShardTls {
    /// This shard's own `SSL_CTX`.
    Openssl(SslAcceptor),
    /// The process-wide rustls configuration.
    Rustls(futures_rustls::TlsAcceptor),
}

impl ServerTls {
    /// Loads `files` with `provider` and makes the session-ticket keys, rotated every
    /// `rotation` once [`ServerTls::spawn_rotation`] runs. With OpenSSL it also builds one
    /// acceptor, so a bad file fails here, at start, rather than in each shard.
    ///
    /// Errors: the provider refused a file or a key ([`TlsError`]), or its RNG failed.
    pub fn new(
        provider: TlsProvider,
        files: TlsFiles,
        rotation: Duration,
    ) -> Result<ServerTls, TlsError> {
        let provider = match provider {
            TlsProvider::Openssl => {
                let tickets = TicketKeys::generate(rotation)
                    .map_err(ossl("generating the session-ticket keys"))?;
                openssl_provider::build_acceptor(&files, &tickets)?;
                Provider::Openssl(tickets)
            }
            TlsProvider::Rustls => {
                let tickets =
                    RustlsTickets::generate(rotation).map_err(|source| TlsError::Rustls {
                        context: "generating the session-ticket keys".into(),
                        source: Box::new(source),
                    })?;
                let config = rustls_provider::build_server_config(&files, tickets.clone())?;
                Provider::Rustls { config, tickets }
            }
        };
        Ok(ServerTls { files, provider })
    }

    /// Which provider serves the connections.
    pub fn provider(&self) -> TlsProvider {
        match self.provider {
            Provider::Openssl(_) => TlsProvider::Openssl,
            Provider::Rustls { .. } => TlsProvider::Rustls,
        }
    }

    /// The acceptor of the calling shard: a new `SslAcceptor` (OpenSSL), or a handle on the
    /// shared configuration (rustls).
    ///
    /// Errors: OpenSSL failed to load the files (changed since start).
    pub fn shard_tls(&self) -> Result<ShardTls, TlsError> {
        Ok(match &self.provider {
            Provider::Openssl(tickets) => {
                ShardTls::Openssl(openssl_provider::build_acceptor(&self.files, tickets)?)
            }
            Provider::Rustls { config, .. } => {
                ShardTls::Rustls(futures_rustls::TlsAcceptor::from(config.clone()))
            }
        })
    }

    /// Starts the thread (`tls-tickets`) that rotates the session-ticket keys every
    /// `--tls-ticket-key-rotation` and then calls `on_rotate`; it runs until the process
    /// exits. A failed rotation (the RNG) is logged and the current key stays until the next
    /// period.
    ///
    /// Errors: the thread could not be spawned.
    pub fn spawn_rotation(&self, on_rotate: impl Fn() + Send + 'static) -> io::Result<()> {
        let (period, rotate): (Duration, Box<dyn Fn() -> Result<(), String> + Send>) =
            match &self.provider {
                Provider::Openssl(keys) => {
                    let keys = keys.clone();
                    (
                        keys.rotation(),
                        Box::new(move || keys.rotate().map_err(|err| err.to_string())),
                    )
                }
                Provider::Rustls { tickets, .. } => {
                    let tickets = tickets.clone();
                    (
                        tickets.rotation(),
                        Box::new(move || tickets.rotate().map_err(|err| err.to_string())),
                    )
                }
            };
        std::thread::Builder::new()
            .name("tls-tickets".into())
            .spawn(move || loop {
                std::thread::sleep(period);
                match rotate() {
                    Ok(()) => on_rotate(),
                    Err(err) => tracing::warn!(
                        "session-ticket key rotation failed, keeping the current key: {err}"
                    ),
                }
            })
            .map(drop)
    }
}
