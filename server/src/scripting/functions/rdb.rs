//! The RDB pieces a functions payload is made of (Redis 7.0 `rdb.c`: `rdbSaveLen`,
//! `rdbSaveRawString`, `rdbLoadLen`, `rdbGenericLoadStringObject`).

use super::lzf;

/// RDB format version written by Redis 7.0 (`RDB_VERSION`).
pub const RDB_VERSION: u16 = 10;
/// Opcode of a function library record (`RDB_OPCODE_FUNCTION2`).
pub const OPCODE_FUNCTION2: u8 = 245;
/// Opcode of the 7.0 release-candidate library record (`RDB_OPCODE_FUNCTION_PRE_GA`).
pub const OPCODE_FUNCTION_PRE_GA: u8 = 246;

/// Appends an RDB length: 6-bit, 14-bit, 32-bit or 64-bit form (big-endian for the last
/// three), as `rdbSaveLen`.
pub fn save_len(out: &mut Vec<u8>, len: u64) {
    if len < (1 << 6) {
        out.push(len as u8);
    } else if len < (1 << 14) {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Appends a string the way `rdbSaveRawString` does with `rdbcompression yes` (the default):
/// longer than 20 bytes and LZF-compressible to at most `len - 4` bytes gives
/// `0xC3, len(compressed), len(original), compressed`; otherwise `len, bytes`.
///
/// Redis would also store an all-digits string of at most 11 bytes as an integer; library
/// code always starts with `#!`, so that case never arises here and is not implemented.
pub fn save_string(out: &mut Vec<u8>, s: &[u8]) {
    if let Some(c) = (s.len() > 20)
        .then(|| lzf::compress(s, s.len() - 4))
        .flatten()
    {
        out.push(0xC3);
        save_len(out, c.len() as u64);
        save_len(out, s.len() as u64);
        out.extend_from_slice(&c);
        return;
    }
    save_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A cursor over a payload. Reads may run into the payload's footer, as Redis's do.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// One byte, `None` at the end.
    pub fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// `n` bytes, `None` when fewer remain.
    pub fn bytes(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// Reads a plain length; `None` on truncation, an unknown form, or a string-encoding
    /// marker (see [`Reader::len_or_encoding`]).
    pub fn length(&mut self) -> Option<u64> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Some(n),
            Len::Encoded(_) => None,
        }
    }

    /// Reads a length or a special-encoding marker (`rdbLoadLenByRef`).
    pub fn len_or_encoding(&mut self) -> Option<Len> {
        let b = self.byte()?;
        Some(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?)),
            2 => match b {
                0x80 => {
                    let s = self.bytes(4)?;
                    Len::Plain(u64::from(u32::from_be_bytes([s[0], s[1], s[2], s[3]])))
                }
                0x81 => {
                    let s = self.bytes(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(s);
                    Len::Plain(u64::from_be_bytes(a))
                }
                _ => return None,
            },
            _ => Len::Encoded(b & 0x3f),
        })
    }

    /// Reads a string in any of its encodings (raw, 8/16/32-bit integer, LZF). `None` when it
    /// cannot be read: truncated, unknown encoding, corrupt LZF data.
    pub fn string(&mut self) -> Option<Vec<u8>> {
        match self.len_or_encoding()? {
            Len::Plain(n) => self.bytes(n).map(<[u8]>::to_vec),
            Len::Encoded(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Len::Encoded(1) => {
                let s = self.bytes(2)?;
                Some(i16::from_le_bytes([s[0], s[1]]).to_string().into_bytes())
            }
            Len::Encoded(2) => {
                let s = self.bytes(4)?;
                Some(
                    i32::from_le_bytes([s[0], s[1], s[2], s[3]])
                        .to_string()
                        .into_bytes(),
                )
            }
            Len::Encoded(3) => {
                let clen = self.length()?;
                let len = usize::try_from(self.length()?).ok()?;
                let c = self.bytes(clen)?;
                lzf::decompress(c, len)
            }
            Len::Encoded(_) => None,
        }
    }
}

/// A length field, or the marker of a specially encoded string.
#[derive(Debug, PartialEq, Eq)]
pub enum Len {
    /// A length.
    Plain(u64),
    /// `11xxxxxx`: 0 = int8, 1 = int16, 2 = int32, 3 = LZF.
    Encoded(u8),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip() {
        for (n, enc) in [
            (5u64, vec![5u8]),
            (63, vec![63]),
            (64, vec![0x40, 64]),
            (16383, vec![0x7f, 0xff]),
            (16384, vec![0x80, 0, 0, 0x40, 0]),
            (1 << 32, vec![0x81, 0, 0, 0, 1, 0, 0, 0, 0]),
        ] {
            let mut out = Vec::new();
            save_len(&mut out, n);
            assert_eq!(out, enc, "{n}");
            assert_eq!(Reader::new(&out).length(), Some(n));
        }
        assert_eq!(Reader::new(&[0x82]).length(), None);
        assert_eq!(Reader::new(&[0x40]).length(), None);
    }

    #[test]
    fn strings_in_every_encoding() {
        assert_eq!(Reader::new(b"\xc0\x05").string(), Some(b"5".to_vec()));
        assert_eq!(Reader::new(b"\xc0\xfb").string(), Some(b"-5".to_vec()));
        assert_eq!(Reader::new(b"\xc1\x05\x01").string(), Some(b"261".to_vec()));
        assert_eq!(
            Reader::new(b"\xc2\x05\x01\x00\x00").string(),
            Some(b"261".to_vec())
        );
        assert_eq!(Reader::new(b"\xc4").string(), None);
        assert_eq!(Reader::new(b"\x03ab").string(), None);
        let long = b"abcabcabcabcabcabcabcabcabcabc";
        let mut out = Vec::new();
        save_string(&mut out, long);
        assert_eq!(out[0], 0xC3);
        assert_eq!(Reader::new(&out).string(), Some(long.to_vec()));
        let mut out = Vec::new();
        save_string(&mut out, b"short");
        assert_eq!(out, b"\x05short");
    }
}
