//! `$6$` text forms (`shardline_auth::PasswordHash::parse`, `HashSetting::parse`).
//!
//! Input: the text (non-UTF-8 input is skipped: both parsers take `&str`). Parsing only —
//! nothing is hashed, so a huge `rounds=` costs nothing. Properties: a parsed hash writes
//! back exactly the text it came from; its setting equals what the lenient setting parser
//! makes of the same text; and a parsed setting, written out with any digest, parses back
//! as a strict hash with the same setting.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shardline_auth::sha512_crypt::CryptDigest;
use shardline_auth::{HashSetting, PasswordHash};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let setting = HashSetting::parse(text);
    if let Ok(hash) = PasswordHash::parse(text) {
        assert_eq!(hash.to_string(), text, "hash must write back its text");
        assert_eq!(
            setting.as_ref(),
            Ok(hash.setting()),
            "strict and lenient settings"
        );
    }
    if let Ok(setting) = setting {
        let written = PasswordHash::new(setting.clone(), CryptDigest::from_bytes([0xa5; 64]));
        let text = written.to_string();
        let Ok(back) = PasswordHash::parse(&text) else {
            panic!("setting {setting:?} written as {text:?} does not parse");
        };
        assert_eq!(back.setting(), &setting, "setting round trip via {text:?}");
        assert_eq!(back.digest().as_bytes(), &[0xa5; 64]);
    }
});
