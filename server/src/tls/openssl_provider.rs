//! `--tls-provider openssl`: each shard's `SslAcceptor`.
//!
//! Every shard builds its own acceptor from the same PEM files, so no OpenSSL object is shared
//! between cores (Kudu's lesson: shared OpenSSL state costs library-wide locks). What the
//! shards do share is plain key material: the session-ticket keys ([`super::ticket_keys`]), so
//! a session resumes on whichever shard the kernel hands the reconnect to.

use std::sync::Arc;

use openssl::ssl::{SslAcceptor, SslFiletype, SslMethod, SslOptions, SslVerifyMode, SslVersion};

use super::ticket_callback;
use super::{ossl, TicketKeys, TlsError, TlsFiles};

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
    builder.check_private_key().map_err(ossl(format!(
        "the private key {} does not match the certificate {}",
        files.key.display(),
        files.cert.display()
    )))?;
    if let Some(ca) = &files.client_ca {
        builder
            .set_ca_file(ca)
            .map_err(ossl(format!("loading client CA {}", ca.display())))?;
        builder.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    }
    Ok(builder.build())
}
