//! A throw-away self-signed certificate, used by every server in a comparison so that all
//! of them do the same TLS work (ECDSA P-256, like shardline's generated development cert).

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
use openssl::x509::{X509Builder, X509NameBuilder};

use super::error::{HarnessError, IoContext};

/// Paths of a generated certificate and its key.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// PEM certificate; also the CA file clients trust (it is self-signed).
    pub cert: PathBuf,
    /// PEM PKCS#8 private key (mode 0600).
    pub key: PathBuf,
}

fn build() -> Result<(Vec<u8>, Vec<u8>), ErrorStack> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    let key = PKey::from_ec_key(EcKey::generate(&group)?)?;
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, "localhost")?;
    let name = name.build();
    let mut serial = BigNum::new()?;
    serial.rand(63, MsbOption::MAYBE_ZERO, false)?;
    let mut b = X509Builder::new()?;
    b.set_version(2)?;
    let serial = serial.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(&name)?;
    b.set_issuer_name(&name)?;
    b.set_pubkey(&key)?;
    let not_before = Asn1Time::days_from_now(0)?;
    let not_after = Asn1Time::days_from_now(30)?;
    b.set_not_before(&not_before)?;
    b.set_not_after(&not_after)?;
    b.append_extension(BasicConstraints::new().critical().ca().build()?)?;
    let san = SubjectAlternativeName::new()
        .dns("localhost")
        .ip("127.0.0.1")
        .build(&b.x509v3_context(None, None))?;
    b.append_extension(san)?;
    b.sign(&key, MessageDigest::sha256())?;
    Ok((b.build().to_pem()?, key.private_key_to_pem_pkcs8()?))
}

/// Writes `cert.pem` and `key.pem` (self-signed, SAN `localhost` and `127.0.0.1`, valid 30
/// days) into `dir`.
///
/// # Errors
/// [`HarnessError::Io`] when the files cannot be written, [`HarnessError::Config`] when
/// OpenSSL refuses to build the certificate.
pub fn generate(dir: &Path) -> Result<CertFiles, HarnessError> {
    let (cert_pem, key_pem) =
        build().map_err(|e| HarnessError::Config(format!("cannot build a certificate: {e}")))?;
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    fs::write(&cert, cert_pem).context(|| format!("writing {}", cert.display()))?;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&key)
        .and_then(|mut f| f.write_all(&key_pem))
        .context(|| format!("writing {}", key.display()))?;
    Ok(CertFiles { cert, key })
}
