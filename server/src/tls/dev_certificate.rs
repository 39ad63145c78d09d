//! The development certificate made on first run when no `--tls-cert`/`--tls-key` is given;
//! both TLS providers load it.

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, SubjectAlternativeName};
use openssl::x509::{X509NameBuilder, X509};

use super::{ossl, TlsError};

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
    use std::time::Duration;

    use super::super::{ServerTls, TlsFiles};
    use super::*;
    use crate::config::TlsProvider;

    #[test]
    fn generated_certificate_loads_into_both_providers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = TlsFiles {
            cert: dir.path().join("cert.pem"),
            key: dir.path().join("key.pem"),
            client_ca: None,
        };
        assert!(ensure_dev_certificate(&files.cert, &files.key).expect("generate"));
        assert!(!ensure_dev_certificate(&files.cert, &files.key).expect("reuse"));
        for provider in [TlsProvider::Openssl, TlsProvider::Rustls] {
            let tls = ServerTls::new(provider, files.clone(), Duration::from_secs(3600))
                .expect("provider setup");
            tls.shard_tls().expect("shard acceptor");
        }
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
