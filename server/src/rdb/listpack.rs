//! Listpacks (Redis 7.0 `listpack.c`): `<total bytes: u32 LE> <count: u16 LE> <entry>… 0xFF`,
//! each entry `<encoding + data> <backlen>`, integers in the smallest integer encoding.

use bytes::Bytes;

use super::encode::canonical_int;

/// Header (total bytes, element count) and terminator sizes.
const HEADER: usize = 6;
const EOF: u8 = 0xFF;
/// The count field's value when the count does not fit in it.
const UNKNOWN_COUNT: u16 = u16::MAX;

/// Builds one listpack.
pub(super) struct Builder {
    entries: Vec<u8>,
    count: usize,
}

impl Builder {
    pub(super) fn new() -> Self {
        Self {
            entries: Vec::new(),
            count: 0,
        }
    }

    /// Appends `element` (as an integer encoding when it is a canonical 64-bit integer).
    pub(super) fn push(&mut self, element: &[u8]) {
        let start = self.entries.len();
        encode_entry(&mut self.entries, element);
        let entry_len = self.entries.len() - start;
        backlen(&mut self.entries, entry_len);
        self.count += 1;
    }

    /// The listpack's size in bytes if `element` were appended.
    pub(super) fn len_with(&self, element: &[u8]) -> usize {
        let mut entry = Vec::new();
        encode_entry(&mut entry, element);
        let entry_len = entry.len();
        backlen(&mut entry, entry_len);
        HEADER + self.entries.len() + entry.len() + 1
    }

    /// The listpack's bytes.
    pub(super) fn finish(self) -> Vec<u8> {
        let total = HEADER + self.entries.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        let count = u16::try_from(self.count)
            .ok()
            .filter(|&c| c != UNKNOWN_COUNT)
            .unwrap_or(UNKNOWN_COUNT);
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&self.entries);
        out.push(EOF);
        out
    }
}

/// `lpEncodeGetType` + `lpEncodeString`/`lpEncodeIntegerGetType`.
fn encode_entry(out: &mut Vec<u8>, element: &[u8]) {
    if let Some(v) = (element.len() <= 20)
        .then(|| canonical_int(element))
        .flatten()
    {
        if (0..=127).contains(&v) {
            out.push(v as u8);
        } else if (-4096..=4095).contains(&v) {
            let u = (if v < 0 { (1 << 13) + v } else { v }) as u16;
            out.extend_from_slice(&[0xC0 | (u >> 8) as u8, u as u8]);
        } else if let Ok(v) = i16::try_from(v) {
            out.push(0xF1);
            out.extend_from_slice(&v.to_le_bytes());
        } else if (-(1 << 23)..(1 << 23)).contains(&v) {
            out.push(0xF2);
            out.extend_from_slice(&v.to_le_bytes()[..3]);
        } else if let Ok(v) = i32::try_from(v) {
            out.push(0xF3);
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            out.push(0xF4);
            out.extend_from_slice(&v.to_le_bytes());
        }
        return;
    }
    let n = element.len();
    if n < 64 {
        out.push(0x80 | n as u8);
    } else if n < 4096 {
        out.extend_from_slice(&[0xE0 | (n >> 8) as u8, n as u8]);
    } else {
        out.push(0xF0);
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(element);
}

/// Bytes `lpEncodeBacklen` uses for an entry of `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// `lpEncodeBacklen`: the entry length, 7 bits per byte, most significant group first, every
/// byte but the first with the high bit set.
fn backlen(out: &mut Vec<u8>, len: usize) {
    let size = backlen_size(len);
    for i in (0..size).rev() {
        let group = ((len >> (7 * i)) & 127) as u8;
        out.push(if i + 1 == size { group } else { group | 128 });
    }
}

/// The elements of the listpack `blob`, integers as their decimal text; `None` when the
/// bytes are not a well-formed listpack (wrong total, entry past the end, missing
/// terminator, a count that disagrees).
pub(super) fn elements(blob: &[u8]) -> Option<Vec<Bytes>> {
    if blob.len() < HEADER + 1 {
        return None;
    }
    let total = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let count = u16::from_le_bytes([blob[4], blob[5]]);
    if total != blob.len() || blob[total - 1] != EOF {
        return None;
    }
    let mut out = Vec::new();
    let mut pos = HEADER;
    while blob[pos] != EOF {
        let (element, entry_len) = entry(&blob[pos..])?;
        out.push(element);
        pos += entry_len + backlen_size(entry_len);
        if pos >= total {
            return None;
        }
    }
    if pos != total - 1 || (count != UNKNOWN_COUNT && usize::from(count) != out.len()) {
        return None;
    }
    Some(out)
}

/// One entry at the start of `p`: its element and the length of encoding + data.
fn entry(p: &[u8]) -> Option<(Bytes, usize)> {
    let b = *p.first()?;
    let int = |v: i64, len: usize| Some((Bytes::from(v.to_string()), len));
    let bytes = |from: usize, n: usize| {
        let data = p.get(from..from.checked_add(n)?)?;
        Some((Bytes::copy_from_slice(data), from + n))
    };
    let le = |n: usize| -> Option<u64> {
        let data = p.get(1..1 + n)?;
        Some(
            data.iter()
                .rev()
                .fold(0u64, |acc, &byte| acc << 8 | u64::from(byte)),
        )
    };
    // Sign-extends the low `bits` bits of `v`.
    let signed = |v: u64, bits: u32| ((v << (64 - bits)) as i64) >> (64 - bits);
    match b {
        0x00..=0x7F => int(i64::from(b), 1),
        0x80..=0xBF => bytes(1, usize::from(b & 0x3F)),
        0xC0..=0xDF => {
            let v = u64::from(b & 0x1F) << 8 | u64::from(*p.get(1)?);
            int(signed(v, 13), 2)
        }
        0xE0..=0xEF => {
            let n = usize::from(b & 0x0F) << 8 | usize::from(*p.get(1)?);
            bytes(2, n)
        }
        0xF0 => bytes(5, usize::try_from(le(4)?).ok()?),
        0xF1 => int(signed(le(2)?, 16), 3),
        0xF2 => int(signed(le(3)?, 24), 4),
        0xF3 => int(signed(le(4)?, 32), 5),
        0xF4 => int(le(8)? as i64, 9),
        _ => None,
    }
}
