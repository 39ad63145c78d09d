//! Crypt-base64 encoding of the 64-byte SHA-512-crypt digest.
//!
//! Follows Drepper, "Unix crypt using SHA-256 and SHA-512", 2008, step 22: the digest
//! bytes are taken in groups of three in a fixed permuted order, each 24-bit group is
//! written as four 6-bit characters least-significant first, and the last byte alone
//! is written as two characters. The alphabet is `./0-9A-Za-z`.

/// The crypt base64 alphabet (`./0-9A-Za-z`), index = 6-bit value.
pub const ALPHABET: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Length in characters of an encoded SHA-512-crypt digest (21 groups × 4 + 2).
pub const ENCODED_LEN: usize = 86;

/// Step 22's byte permutation: each entry is (high, middle, low) byte of one 24-bit group.
const GROUPS: [[usize; 3]; 21] = [
    [0, 21, 42],
    [22, 43, 1],
    [44, 2, 23],
    [3, 24, 45],
    [25, 46, 4],
    [47, 5, 26],
    [6, 27, 48],
    [28, 49, 7],
    [50, 8, 29],
    [9, 30, 51],
    [31, 52, 10],
    [53, 11, 32],
    [12, 33, 54],
    [34, 55, 13],
    [56, 14, 35],
    [15, 36, 57],
    [37, 58, 16],
    [59, 17, 38],
    [18, 39, 60],
    [40, 61, 19],
    [62, 20, 41],
];

/// Value of one alphabet character, or `None` outside `./0-9A-Za-z`.
fn value_of(c: u8) -> Option<u32> {
    match c {
        b'.' => Some(0),
        b'/' => Some(1),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 2),
        b'A'..=b'Z' => Some(u32::from(c - b'A') + 12),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 38),
        _ => None,
    }
}

fn push_chars(out: &mut String, mut w: u32, n: usize) {
    for _ in 0..n {
        out.push(char::from(ALPHABET[(w & 0x3f) as usize]));
        w >>= 6;
    }
}

/// Encodes a 64-byte digest into its 86-character crypt-base64 form (step 22).
pub fn encode_digest(digest: &[u8; 64], out: &mut String) {
    for g in GROUPS {
        let w = (u32::from(digest[g[0]]) << 16)
            | (u32::from(digest[g[1]]) << 8)
            | u32::from(digest[g[2]]);
        push_chars(out, w, 4);
    }
    push_chars(out, u32::from(digest[63]), 2);
}

/// Why an encoded digest could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The text is not exactly [`ENCODED_LEN`] characters long; carries the length seen.
    Length(usize),
    /// A character outside `./0-9A-Za-z`; carries its byte offset within the hash part.
    Character(usize),
    /// The last character carries bits above the 8 the final byte can hold, so encoding
    /// the result again would not give back the same text.
    NonCanonical,
}

/// Decodes the 86-character hash part back into the 64-byte digest (inverse of step 22).
///
/// # Errors
/// [`DecodeError`] if the length, a character or the unused top bits are wrong.
pub fn decode_digest(text: &[u8]) -> Result<[u8; 64], DecodeError> {
    if text.len() != ENCODED_LEN {
        return Err(DecodeError::Length(text.len()));
    }
    let mut vals = [0u32; ENCODED_LEN];
    for (i, &c) in text.iter().enumerate() {
        vals[i] = value_of(c).ok_or(DecodeError::Character(i))?;
    }
    let mut digest = [0u8; 64];
    for (gi, g) in GROUPS.iter().enumerate() {
        let v = &vals[gi * 4..gi * 4 + 4];
        let w = v[0] | (v[1] << 6) | (v[2] << 12) | (v[3] << 18);
        digest[g[0]] = (w >> 16) as u8;
        digest[g[1]] = (w >> 8) as u8;
        digest[g[2]] = w as u8;
    }
    let last = vals[84] | (vals[85] << 6);
    if last > 0xff {
        return Err(DecodeError::NonCanonical);
    }
    digest[63] = last as u8;
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_byte_position() {
        let mut d = [0u8; 64];
        for (i, b) in d.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        let mut s = String::new();
        encode_digest(&d, &mut s);
        assert_eq!(s.len(), ENCODED_LEN);
        assert_eq!(decode_digest(s.as_bytes()), Ok(d));
    }

    #[test]
    fn zero_digest_is_all_dots() {
        let mut s = String::new();
        encode_digest(&[0u8; 64], &mut s);
        assert_eq!(s, ".".repeat(86));
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(decode_digest(b"abc"), Err(DecodeError::Length(3)));
        let mut t = vec![b'.'; 86];
        t[5] = b'$';
        assert_eq!(decode_digest(&t), Err(DecodeError::Character(5)));
        let mut t = vec![b'.'; 86];
        t[85] = b'2'; // value 4 in the top char = bit 8 set
        assert_eq!(decode_digest(&t), Err(DecodeError::NonCanonical));
    }
}
