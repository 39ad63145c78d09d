//! `--tls-provider rustls`: one rustls `ServerConfig` (aws-lc-rs crypto) behind an `Arc`,
//! shared by every shard. rustls keeps no per-connection state in it that needs a lock on the
//! handshake path once stateful session storage is off (tickets carry the sessions), so
//! sharing it costs the shards only reference counts.
//!
//! Policy, as the OpenSSL provider's: TLS 1.2 and 1.3 only (rustls implements nothing older),
//! rustls's default suites (all AEAD with ECDHE: AES-GCM and ChaCha20-Poly1305), no
//! renegotiation (rustls has none), client certificates verified against `--tls-ca` and then
//! required, session tickets from [`RustlsTickets`] for TLS 1.2 and 1.3.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig};

use super::rustls_tickets::RustlsTickets;
use super::{TlsError, TlsFiles};

fn failed<E>(context: impl Into<String>) -> impl FnOnce(E) -> TlsError
where
    E: std::error::Error + Send + Sync + 'static,
{
    let context = context.into();
    move |source| TlsError::Rustls {
        context,
        source: Box::new(source),
    }
}

/// Every certificate of a PEM file, in file order.
fn load_certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let context = || format!("loading {what} {}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(failed(context()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed(context()))?;
    if certs.is_empty() {
        return Err(TlsError::Rustls {
            context: context(),
            source: "the file holds no PEM certificate".into(),
        });
    }
    Ok(certs)
}

/// The private key in the PEM file at `path` (PKCS#8, PKCS#1 RSA or SEC1 EC).
///
/// Errors: the file cannot be read, holds no private key, or holds an encrypted one (rustls
/// has no passphrase support; the message says how to decrypt it).
fn load_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let context = || format!("loading private key {}", path.display());
    let pem = std::fs::read(path).map_err(|err| TlsError::Rustls {
        context: context(),
        source: err.into(),
    })?;
    let text = String::from_utf8_lossy(&pem);
    if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(TlsError::Rustls {
            context: context(),
            source: format!(
                "the key is encrypted, which --tls-provider rustls does not support: decrypt it \
                 (`openssl pkey -in {0} -out {0}.plain`) and point --tls-key at the result",
                path.display()
            )
            .into(),
        });
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|err| TlsError::Rustls {
        context: context(),
        source: match err {
            rustls::pki_types::pem::Error::NoItemsFound => {
                "the file holds no PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC)".into()
            }
            other => other.into(),
        },
    })
}

/// Builds the `ServerConfig` every shard serves with, sealing session tickets with `tickets`.
///
/// Errors: a file that cannot be read or holds no certificate or key, a key that does not
/// match the certificate or that rustls cannot use (RSA below 2048 bits, DSA, an encrypted
/// key), a client CA that is not a usable trust anchor.
pub fn build_server_config(
    files: &TlsFiles,
    tickets: Arc<RustlsTickets>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(failed("choosing TLS 1.2 and 1.3"))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in load_certificates(ca, "client CA")? {
                roots
                    .add(cert)
                    .map_err(failed(format!("adding a client CA from {}", ca.display())))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(failed(format!("client CA {}", ca.display())))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let chain = load_certificates(&files.cert, "certificate chain")?;
    let key = load_private_key(&files.key)?;
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(failed(format!(
            "using the private key {} with the certificate {} (rustls takes RSA keys of at \
             least 2048 bits, ECDSA P-256/P-384/P-521 and Ed25519 keys, matching the \
             certificate)",
            files.key.display(),
            files.cert.display()
        )))?;
    config.ticketer = tickets;
    // Tickets carry the sessions; a shared stateful cache would be one mutex for all shards.
    config.session_storage = Arc::new(NoServerSessionStorage {});
    Ok(Arc::new(config))
}
