//! libxcrypt's `crypt_r` through FFI, shared by the `hash` and `hash_batch` benches
//! (each includes this file with `#[path = "common/xcrypt.rs"] mod xcrypt;`).

use std::ffi::{c_char, c_void, CStr};

#[link(name = "crypt")]
extern "C" {
    fn crypt_r(phrase: *const c_char, setting: *const c_char, data: *mut c_void) -> *mut c_char;
}

/// libxcrypt's `struct crypt_data` is 32 KiB; give it 64 KiB of zeroed heap to be safe.
pub struct CryptData(Vec<u8>);

impl CryptData {
    pub fn new() -> Self {
        CryptData(vec![0u8; 64 << 10])
    }

    /// `crypt_r(phrase, setting)`, or `None` if libxcrypt refused.
    pub fn crypt(&mut self, phrase: &CStr, setting: &CStr) -> Option<String> {
        // SAFETY: both strings are NUL-terminated; data points to a zeroed buffer larger
        // than struct crypt_data; the result points into that buffer and is copied out
        // before the buffer is used again.
        let out = unsafe {
            crypt_r(
                phrase.as_ptr(),
                setting.as_ptr(),
                self.0.as_mut_ptr().cast(),
            )
        };
        if out.is_null() {
            return None;
        }
        // SAFETY: non-null results of crypt_r are NUL-terminated strings inside `data`.
        let s = unsafe { CStr::from_ptr(out) }.to_str().ok()?.to_string();
        (!s.starts_with('*')).then_some(s)
    }
}
