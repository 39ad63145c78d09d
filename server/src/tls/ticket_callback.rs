//! The unsafe half of shared ticket keys: installs OpenSSL 3's
//! `SSL_CTX_set_tlsext_ticket_key_evp_cb` on a shard's context so that its session tickets
//! (TLS 1.2 RFC 5077 tickets and TLS 1.3 stateless PSK tickets alike) are sealed with the
//! process-wide [`TicketKeys`] instead of the context's own random keys.
//!
//! The `openssl` crate does not wrap this callback, so this module declares the two OpenSSL 3
//! functions it needs that `openssl-sys` lacks and keeps every `unsafe` block here. The keys
//! reach the callback through the context's ex-data slot (set with the `openssl` crate's
//! safe API, read back from the `SSL*` OpenSSL passes in).
//!
//! Error-queue hygiene: the callback adds no entry on the paths taken by well-formed and
//! unknown tickets; only a failing cipher or MAC initialisation (OpenSSL itself pushes the
//! cause) fails the handshake, and the `openssl` crate then drains the queue into the
//! handshake's error.

use std::ffi::{c_char, c_int, c_long, c_uchar};
use std::sync::{Arc, OnceLock};

use foreign_types::ForeignTypeRef;
use openssl::error::ErrorStack;
use openssl::ex_data::Index;
use openssl::ssl::{SslContext, SslContextBuilder, SslRef};
use openssl_sys as ffi;

use super::ticket_keys::{KeyAge, TicketKey, TicketKeys, HMAC_KEY_LEN, KEY_NAME_LEN};

/// `EVP_MAX_IV_LENGTH`: the size of the IV buffer OpenSSL hands the callback.
const MAX_IV_LEN: usize = 16;
/// AES-256-CBC's IV length (one block).
const AES_CBC_IV_LEN: c_int = 16;

type TicketKeyEvpCb = unsafe extern "C" fn(
    ssl: *mut ffi::SSL,
    key_name: *mut c_uchar,
    iv: *mut c_uchar,
    cipher: *mut ffi::EVP_CIPHER_CTX,
    mac: *mut ffi::EVP_MAC_CTX,
    enc: c_int,
) -> c_int;

extern "C" {
    /// OpenSSL ≥ 3.0, `ssl/ssl_lib.c`; returns 1.
    fn SSL_CTX_set_tlsext_ticket_key_evp_cb(
        ctx: *mut ffi::SSL_CTX,
        cb: Option<TicketKeyEvpCb>,
    ) -> c_int;
    /// OpenSSL ≥ 3.0, `crypto/params.c`; builds a parameter, never fails.
    fn OSSL_PARAM_construct_utf8_string(
        key: *const c_char,
        buf: *mut c_char,
        bsize: usize,
    ) -> ffi::OSSL_PARAM;
    /// `ssl/ssl_lib.c`: the session timeout in seconds (also TLS 1.3's ticket lifetime);
    /// returns the previous one.
    fn SSL_CTX_set_timeout(ctx: *mut ffi::SSL_CTX, seconds: c_long) -> c_long;
}

/// The context ex-data slot holding the keys; allocated once per process.
fn keys_index() -> Result<Index<SslContext, Arc<TicketKeys>>, ErrorStack> {
    static INDEX: OnceLock<Index<SslContext, Arc<TicketKeys>>> = OnceLock::new();
    if let Some(index) = INDEX.get() {
        return Ok(*index);
    }
    let index = SslContext::new_ex_index()?;
    // A race between two first callers allocates one spare slot, nothing worse.
    Ok(*INDEX.get_or_init(|| index))
}

/// Makes the context being built seal and open session tickets with `keys`, and sets its
/// session timeout to the longest a ticket can decrypt ([`TicketKeys::max_ticket_lifetime`]).
///
/// Errors: allocating the ex-data slot failed (OpenSSL's error queue, drained).
pub fn install(builder: &mut SslContextBuilder, keys: Arc<TicketKeys>) -> Result<(), ErrorStack> {
    let index = keys_index()?;
    let lifetime = c_long::try_from(keys.max_ticket_lifetime().as_secs()).unwrap_or(c_long::MAX);
    builder.set_ex_data(index, keys);
    // SAFETY: `builder.as_ptr()` is a live SSL_CTX we own; the callback only reads the
    // ex-data set just above, which lives as long as the context.
    unsafe {
        SSL_CTX_set_tlsext_ticket_key_evp_cb(builder.as_ptr(), Some(ticket_key_cb));
        SSL_CTX_set_timeout(builder.as_ptr(), lifetime.max(1));
    }
    Ok(())
}

/// OpenSSL's ticket key callback (see `SSL_CTX_set_tlsext_ticket_key_cb(3)`): with `enc`
/// = 1 it names the key, draws the IV and initialises encryption; with `enc` = 0 it looks
/// the name up and initialises decryption. Returns 1 (go on), 2 (decrypted with the previous
/// key: go on and issue a fresh ticket), 0 (unknown key: full handshake) or −1 (error).
unsafe extern "C" fn ticket_key_cb(
    ssl: *mut ffi::SSL,
    key_name: *mut c_uchar,
    iv: *mut c_uchar,
    cipher: *mut ffi::EVP_CIPHER_CTX,
    mac: *mut ffi::EVP_MAC_CTX,
    enc: c_int,
) -> c_int {
    let Ok(index) = keys_index() else { return -1 };
    // SAFETY: OpenSSL passes the live SSL* of the handshake in progress.
    let ssl = unsafe { SslRef::from_ptr(ssl) };
    let Some(keys) = ssl.ssl_context().ex_data(index) else {
        return -1;
    };
    // SAFETY: OpenSSL passes a 16-byte key name buffer and an EVP_MAX_IV_LENGTH IV buffer.
    let name = unsafe { &mut *key_name.cast::<[u8; KEY_NAME_LEN]>() };
    let iv = unsafe { &mut *iv.cast::<[u8; MAX_IV_LEN]>() };
    if enc == 1 {
        if openssl::rand::rand_bytes(&mut iv[..AES_CBC_IV_LEN as usize]).is_err() {
            return -1;
        }
        keys.with_current(|key| {
            name.copy_from_slice(&key.name);
            // SAFETY: the contexts come from OpenSSL for this call.
            if unsafe { init_cipher_and_mac(key, iv, cipher, mac, true) } {
                1
            } else {
                -1
            }
        })
    } else {
        keys.with_named(name, |found| match found {
            None => 0,
            Some((key, age)) => {
                // SAFETY: as above.
                if !unsafe { init_cipher_and_mac(key, iv, cipher, mac, false) } {
                    -1
                } else if age == KeyAge::Previous {
                    2
                } else {
                    1
                }
            }
        })
    }
}

/// HMAC-SHA256 keyed with `key.hmac_key` on `mac`.
unsafe fn set_mac_key(key: &TicketKey, mac: *mut ffi::EVP_MAC_CTX) -> bool {
    let mut digest = *b"SHA256\0";
    // OSSL_PARAM only reads through these pointers here (EVP_MAC_CTX_set_params copies).
    let params = unsafe {
        [
            ffi::OSSL_PARAM_construct_octet_string(
                c"key".as_ptr(),
                key.hmac_key.as_ptr().cast_mut().cast(),
                HMAC_KEY_LEN,
            ),
            OSSL_PARAM_construct_utf8_string(c"digest".as_ptr(), digest.as_mut_ptr().cast(), 0),
            ffi::OSSL_PARAM_construct_end(),
        ]
    };
    unsafe { ffi::EVP_MAC_CTX_set_params(mac, params.as_ptr()) == 1 }
}

/// AES-256-CBC with `key.aes_key` and `iv` on `cipher` (encrypting when `encrypt`), and the
/// HMAC key on `mac`.
unsafe fn init_cipher_and_mac(
    key: &TicketKey,
    iv: &[u8; MAX_IV_LEN],
    cipher: *mut ffi::EVP_CIPHER_CTX,
    mac: *mut ffi::EVP_MAC_CTX,
    encrypt: bool,
) -> bool {
    unsafe {
        ffi::EVP_CipherInit_ex(
            cipher,
            ffi::EVP_aes_256_cbc(),
            std::ptr::null_mut(),
            key.aes_key.as_ptr(),
            iv.as_ptr(),
            c_int::from(encrypt),
        ) == 1
            && set_mac_key(key, mac)
    }
}
