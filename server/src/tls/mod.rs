//! TLS: the per-shard `SslAcceptor` and the development certificate made on first run.
//!
//! Every shard builds its own acceptor from the same PEM bytes, so no OpenSSL object is shared
//! between cores (Kudu's lesson: shared OpenSSL state costs library-wide locks). What the
//! shards do share is plain key material: the session-ticket keys ([`ticket_keys`]), so a
//! session resumes on whichever shard the kernel hands the reconnect to.

pub mod error_queue;
mod ticket_callback;
pub mod ticket_keys;

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::ssl::{SslAcceptor, SslFiletype, SslMethod, SslOptions, SslVerifyMode, SslVersion};
use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, SubjectAlternativeName};
use openssl::x509::{X509NameBuilder, X509};

pub use ticket_keys::TicketKeys;

/// Paths of the PEM files a shard's acceptor is built from.
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

/// Session ID context of every shard's acceptor: a resumed session must carry the same one,
/// and OpenSSL refuses to resume without one when client certificates are verified.
const SESSION_ID_CONTEXT: &[u8] = b"shardline";

/// Builds one shard's acceptor: TLS 1.2 and 1.3 only, Mozilla's intermediate cipher list,
/// client-initiated renegotiation refused, optional client-certificate verification, and
/// session tickets sealed with the process-wide `tickets` (so any shard resumes them).
///
/// Errors: any file that OpenSSL cannot load, or a key that does not match the certificate.
pub fn build_acceptor(
    files: &TlsFiles,
    tickets: &Arc<TicketKeys>,
) -> Result<SslAcceptor, TlsError> {
    let mut builder = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server())
        .map_err(ossl("creating the acceptor"))?;
    builder
        .set_min_proto_version(Some(SslVersion::TLS1_2))
        .map_err(ossl("setting TLS 1.2 as minimum"))?;
    builder.set_options(SslOptions::NO_RENEGOTIATION | SslOptions::NO_COMPRESSION);
    // Without read-ahead OpenSSL reads each record with two recv calls (5-byte header, then
    // body) and a third that finds the socket empty; with it, one recv takes what is there.
    builder.set_read_ahead(true);
    builder
        .set_session_id_context(SESSION_ID_CONTEXT)
        .map_err(ossl("setting the session ID context"))?;
    ticket_callback::install(&mut builder, tickets.clone())
        .map_err(ossl("installing the shared session-ticket keys"))?;
    builder
        .set_certificate_chain_file(&files.cert)
        .map_err(ossl(format!(
            "loading certificate chain {}",
            files.cert.display()
        )))?;
    builder
        .set_private_key_file(&files.key, SslFiletype::PEM)
        .map_err(ossl(format!("loading private key {}", files.key.display())))?;
    builder
        .check_private_key()
        .map_err(ossl("the private key does not match the certificate"))?;
    if let Some(ca) = &files.client_ca {
        builder
            .set_ca_file(ca)
            .map_err(ossl(format!("loading client CA {}", ca.display())))?;
        builder.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    }
    Ok(builder.build())
}

/// Creates a self-signed ECDSA P-256 certificate (SAN: localhost, 127.0.0.1, ::1; valid 825
/// days) at `cert` and `key` unless both exist. Returns whether it generated them.
///
/// The key file is written with mode 0600. Errors: OpenSSL failures, I/O errors writing, and
/// [`TlsError::Io`] naming the missing file when only one of the two exists (it is never
/// overwritten).
pub fn ensure_dev_certificate(cert: &Path, key: &Path) -> Result<bool, TlsError> {
    match (cert.exists(), key.exists()) {
        (true, true) => return Ok(false),
        (false, false) => {}
        // Never overwrite half of a pair: it may be the user's own certificate or key.
        (true, false) | (false, true) => {
            let (present, missing) = if cert.exists() {
                (cert, key)
            } else {
                (key, cert)
            };
            return Err(TlsError::Io {
                path: missing.to_path_buf(),
                source: io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "{} exists but {} does not; restore it, pass --tls-cert and --tls-key, \
                         or remove {} to generate a new development pair",
                        present.display(),
                        missing.display(),
                        present.display()
                    ),
                ),
            });
        }
    }
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).map_err(ossl("P-256 group"))?;
    let ec = EcKey::generate(&group).map_err(ossl("generating the P-256 key"))?;
    let pkey = PKey::from_ec_key(ec).map_err(ossl("wrapping the key"))?;

    let mut name = X509NameBuilder::new().map_err(ossl("subject name"))?;
    name.append_entry_by_nid(Nid::COMMONNAME, "shardline dev certificate")
        .map_err(ossl("subject name"))?;
    let name = name.build();

    let mut x509 = X509::builder().map_err(ossl("certificate builder"))?;
    let build = |x509: &mut openssl::x509::X509Builder| -> Result<(), openssl::error::ErrorStack> {
        x509.set_version(2)?;
        let mut serial = BigNum::new()?;
        serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
        let serial = serial.to_asn1_integer()?;
        x509.set_serial_number(&serial)?;
        x509.set_subject_name(&name)?;
        x509.set_issuer_name(&name)?;
        x509.set_pubkey(&pkey)?;
        let not_before = Asn1Time::days_from_now(0)?;
        let not_after = Asn1Time::days_from_now(825)?;
        x509.set_not_before(&not_before)?;
        x509.set_not_after(&not_after)?;
        x509.append_extension(BasicConstraints::new().critical().ca().build()?)?;
        x509.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
        let san = SubjectAlternativeName::new()
            .dns("localhost")
            .ip("127.0.0.1")
            .ip("::1")
            .build(&x509.x509v3_context(None, None))?;
        x509.append_extension(san)?;
        x509.sign(&pkey, MessageDigest::sha256())?;
        Ok(())
    };
    build(&mut x509).map_err(ossl("building the self-signed certificate"))?;
    let cert_pem = x509
        .build()
        .to_pem()
        .map_err(ossl("encoding the certificate"))?;
    let key_pem = pkey
        .private_key_to_pem_pkcs8()
        .map_err(ossl("encoding the key"))?;
    write_new(key, &key_pem, 0o600)?;
    write_new(cert, &cert_pem, 0o644)?;
    Ok(true)
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    let io_err = |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(io_err)?;
    file.write_all(bytes).map_err(io_err)?;
    file.sync_all().map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_certificate_loads_into_an_acceptor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = TlsFiles {
            cert: dir.path().join("cert.pem"),
            key: dir.path().join("key.pem"),
            client_ca: None,
        };
        assert!(ensure_dev_certificate(&files.cert, &files.key).expect("generate"));
        assert!(!ensure_dev_certificate(&files.cert, &files.key).expect("reuse"));
        let tickets = TicketKeys::generate(std::time::Duration::from_secs(3600)).expect("keys");
        build_acceptor(&files, &tickets).expect("acceptor");
        let cert = X509::from_pem(&fs::read(&files.cert).expect("read")).expect("pem");
        let sans: Vec<String> = cert
            .subject_alt_names()
            .expect("SAN")
            .iter()
            .filter_map(|n| n.dnsname().map(str::to_owned))
            .collect();
        assert_eq!(sans, ["localhost"]);
        assert_eq!(
            cert.public_key()
                .expect("key")
                .ec_key()
                .expect("ec")
                .group()
                .curve_name(),
            Some(Nid::X9_62_PRIME256V1)
        );
    }
}
