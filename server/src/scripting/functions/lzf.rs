//! LZF compression as Redis 7.0 uses it for RDB strings (liblzf 3.6 format and match search
//! as built by Redis: 16-bit hash table, "very fast" mode; `lzf_c.c`, `lzf_d.c`).
//!
//! The compressor reproduces Redis's output byte for byte (the `FUNCTION DUMP` payload has to
//! be identical), including where it gives up because the output would not fit.

const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
const MAX_LIT: usize = 1 << 5;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

fn first(input: &[u8], i: usize) -> u32 {
    (u32::from(input[i]) << 8) | u32::from(input[i + 1])
}

fn next(h: u32, input: &[u8], i: usize) -> u32 {
    (h << 8) | u32::from(input[i + 2])
}

/// Compresses `input` into at most `out_len` bytes. `None` when the input is empty,
/// `out_len` is 0, or the output would not fit in `out_len` bytes (Redis then stores the
/// string uncompressed).
pub fn compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let in_len = input.len();
    if in_len == 0 || out_len == 0 {
        return None;
    }
    // Positions are stored +1 so that 0 means "empty"; Redis's table stores offsets from the
    // input start and refuses a reference to offset 0 (`ref > in_data`), which is the same.
    let mut htab = vec![0u32; HSIZE];
    let mut out = vec![0u8; out_len];
    let mut ip = 0usize;
    let mut op = 1usize; // start run: out[0] will hold the literal count
    let mut lit = 0usize;
    let mut hval = if in_len >= 2 { first(input, 0) } else { 0 };
    while in_len >= 3 && ip < in_len - 2 {
        hval = next(hval, input, ip);
        let slot = idx(hval);
        let reference = htab[slot] as usize; // position + 1, or 0
        htab[slot] = (ip + 1) as u32;
        let candidate = if reference > 1 {
            let r = reference - 1;
            let off = ip - r - 1;
            (r < ip
                && off < MAX_OFF
                && input[r + 2] == input[ip + 2]
                && input[r] == input[ip]
                && input[r + 1] == input[ip + 1])
                .then_some((r, off))
        } else {
            None
        };
        if let Some((r, off)) = candidate {
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            // out_end = out_len; `op + 3 + 1 >= out_end` then the exact test.
            if op + 4 >= out_len && op - usize::from(lit == 0) + 4 >= out_len {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            op -= usize::from(lit == 0);
            if maxlen > 16 {
                // Redis unrolls the first 16 comparisons without the maxlen bound.
                let mut stopped = false;
                for _ in 0..16 {
                    len += 1;
                    if input[r + len] != input[ip + len] {
                        stopped = true;
                        break;
                    }
                }
                if !stopped {
                    loop {
                        len += 1;
                        if !(len < maxlen && input[r + len] == input[ip + len]) {
                            break;
                        }
                    }
                }
            } else {
                loop {
                    len += 1;
                    if !(len < maxlen && input[r + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2; // as encoded: match length minus 2
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1; // start run
            ip += len + 1;
            if ip >= in_len - 2 {
                break;
            }
            ip -= 2;
            hval = first(input, ip);
            hval = next(hval, input, ip);
            htab[idx(hval)] = (ip + 1) as u32;
            ip += 1;
            hval = next(hval, input, ip);
            htab[idx(hval)] = (ip + 1) as u32;
            ip += 1;
        } else {
            if op >= out_len {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_len {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1);
    op -= usize::from(lit == 0);
    out.truncate(op);
    Some(out)
}

/// Decompresses `input`, which must expand to exactly `expected_len` bytes (the length stored
/// next to it in the RDB string). `None` for corrupt data or a length mismatch. As in Redis,
/// an `expected_len` of 0 always succeeds with an empty result.
pub fn decompress(input: &[u8], expected_len: usize) -> Option<Vec<u8>> {
    if expected_len == 0 {
        return Some(Vec::new());
    }
    // Every 2..3 input bytes produce at most 264 output bytes; do not trust expected_len for
    // the allocation.
    let mut out: Vec<u8> = Vec::with_capacity(expected_len.min(input.len().saturating_mul(132)));
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            if out.len() + n > expected_len || ip + n > input.len() {
                return None;
            }
            out.extend_from_slice(&input[ip..ip + n]);
            ip += n;
        } else {
            let mut len = ctrl >> 5;
            if ip >= input.len() {
                return None;
            }
            if len == 7 {
                len += usize::from(input[ip]);
                ip += 1;
                if ip >= input.len() {
                    return None;
                }
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(input[ip]) + 1;
            ip += 1;
            len += 2;
            if out.len() + len > expected_len || back > out.len() {
                return None;
            }
            let start = out.len() - back;
            for i in 0..len {
                let b = out[start + i];
                out.push(b);
            }
        }
    }
    (out.len() == expected_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_gives_up_when_too_big() {
        let data: Vec<u8> = b"redis.register_function('f1', function() return 1 end)\n"
            .repeat(20)
            .to_vec();
        let c = compress(&data, data.len() - 4).expect("compressible");
        assert!(c.len() < data.len() / 4);
        assert_eq!(decompress(&c, data.len()).expect("valid"), data);
        // Incompressible short input: more output than allowed.
        let short = b"#!lua name=a\nredis.register_function('f',function()end)";
        assert_eq!(compress(short, short.len() - 4), None);
        // Literal-only output fits when the limit allows it.
        let lit = compress(b"abcdefgh", 64).expect("fits");
        assert_eq!(lit, b"\x07abcdefgh");
        assert_eq!(decompress(&lit, 8).expect("valid"), b"abcdefgh");
    }

    #[test]
    fn decompress_rejects_corrupt_data() {
        assert_eq!(decompress(b"\x04abcd", 5), None); // literal run past the input
        assert_eq!(decompress(b"\x00a\x20\x05", 3), None); // reference before the start
        assert_eq!(decompress(b"\x02abc", 2), None); // longer than announced
        assert_eq!(decompress(b"\x02abc", 4), None); // shorter than announced
        assert_eq!(decompress(b"\x00a\x20", 3), None); // truncated reference
        assert_eq!(decompress(b"\xff", 0), Some(Vec::new())); // Redis: len 0 always "works"
        assert_eq!(decompress(b"\x00a\x20\x00", 4).expect("valid"), b"aaaa");
    }
}
