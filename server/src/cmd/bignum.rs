//! Minimal unsigned big integer for exact `long double` emulation
//! ([`super::longdouble`]): only the operations decimal/binary conversion
//! and exact addition need. Little-endian base-2^32 limbs, no leading zero
//! limbs.

use std::cmp::Ordering;

/// Unsigned big integer, little-endian 32-bit limbs, normalised (no zero
/// limb at the top; zero is the empty vector).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Big(Vec<u32>);

impl Big {
    /// The value `v`.
    pub fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    /// `10^n`.
    pub fn pow10(n: u64) -> Big {
        let mut b = Big::from_u64(1);
        let mut left = n;
        while left > 0 {
            let step = left.min(9);
            b.mul_small(10u32.pow(step as u32));
            left -= step;
        }
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of significant bits (0 for zero).
    pub fn bits(&self) -> u64 {
        match self.0.last() {
            Some(top) => (self.0.len() as u64) * 32 - u64::from(top.leading_zeros()),
            None => 0,
        }
    }

    /// Bit `i` (0 = least significant).
    pub fn bit(&self, i: u64) -> bool {
        let limb = (i / 32) as usize;
        self.0.get(limb).is_some_and(|l| (l >> (i % 32)) & 1 == 1)
    }

    /// Whether any of the bits below `i` is set.
    pub fn any_below(&self, i: u64) -> bool {
        let full = ((i / 32) as usize).min(self.0.len());
        if self.0[..full].iter().any(|&l| l != 0) {
            return true;
        }
        let rest = i % 32;
        rest > 0
            && self
                .0
                .get(full)
                .is_some_and(|l| l & ((1u32 << rest) - 1) != 0)
    }

    /// The low 64 bits.
    #[cfg(test)]
    pub fn low_u64(&self) -> u64 {
        let lo = u64::from(self.0.first().copied().unwrap_or(0));
        let hi = u64::from(self.0.get(1).copied().unwrap_or(0));
        lo | (hi << 32)
    }

    /// `self = self * m + a`.
    pub fn mul_add_small(&mut self, m: u32, a: u32) {
        let mut carry = u64::from(a);
        for limb in &mut self.0 {
            let v = u64::from(*limb) * u64::from(m) + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    /// `self *= m`.
    pub fn mul_small(&mut self, m: u32) {
        self.mul_add_small(m, 0);
    }

    /// `self * o`.
    pub fn mul(&self, o: &Big) -> Big {
        let mut out = vec![0u32; self.0.len() + o.0.len()];
        for (i, &a) in self.0.iter().enumerate() {
            let mut carry = 0u64;
            for (j, &b) in o.0.iter().enumerate() {
                let v = u64::from(a) * u64::from(b) + u64::from(out[i + j]) + carry;
                out[i + j] = v as u32;
                carry = v >> 32;
            }
            out[i + o.0.len()] = carry as u32;
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self / d` (d > 0), returning the remainder.
    pub fn div_small(&mut self, d: u32) -> u32 {
        let mut rem = 0u64;
        for limb in self.0.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / u64::from(d)) as u32;
            rem = cur % u64::from(d);
        }
        self.trim();
        rem as u32
    }

    /// `self << n`.
    pub fn shl(&self, n: u64) -> Big {
        if self.is_zero() {
            return Big::default();
        }
        let limbs = (n / 32) as usize;
        let bits = (n % 32) as u32;
        let mut out = vec![0u32; limbs];
        out.reserve(self.0.len() + 1);
        let mut carry = 0u32;
        for &l in &self.0 {
            if bits == 0 {
                out.push(l);
            } else {
                out.push((l << bits) | carry);
                carry = l >> (32 - bits);
            }
        }
        out.push(carry);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self >> n` (bits shifted out are dropped).
    pub fn shr(&self, n: u64) -> Big {
        let limbs = (n / 32) as usize;
        if limbs >= self.0.len() {
            return Big::default();
        }
        let bits = (n % 32) as u32;
        let src = &self.0[limbs..];
        let out = (0..src.len())
            .map(|i| {
                let lo = src[i] >> bits;
                let hi = match (bits, src.get(i + 1)) {
                    (0, _) | (_, None) => 0,
                    (b, Some(&next)) => next << (32 - b),
                };
                lo | hi
            })
            .collect();
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self + o`.
    pub fn add(&self, o: &Big) -> Big {
        let (long, short) = if self.0.len() >= o.0.len() {
            (self, o)
        } else {
            (o, self)
        };
        let mut out = Vec::with_capacity(long.0.len() + 1);
        let mut carry = 0u64;
        for (i, &l) in long.0.iter().enumerate() {
            let v = u64::from(l) + u64::from(short.0.get(i).copied().unwrap_or(0)) + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        out.push(carry as u32);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self - o`; requires `self >= o`.
    pub fn sub(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for (i, &l) in self.0.iter().enumerate() {
            let mut v = i64::from(l) - i64::from(o.0.get(i).copied().unwrap_or(0)) - borrow;
            borrow = i64::from(v < 0);
            if v < 0 {
                v += 1 << 32;
            }
            out.push(v as u32);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// Sets bit `i`.
    pub fn set_bit(&mut self, i: u64) {
        let limb = (i / 32) as usize;
        if self.0.len() <= limb {
            self.0.resize(limb + 1, 0);
        }
        self.0[limb] |= 1 << (i % 32);
    }

    /// `(self / d, self % d != 0)` for `d > 0`, by binary long division
    /// (cheap when the quotient is short).
    pub fn div_sticky(&self, d: &Big) -> (Big, bool) {
        let (nb, db) = (self.bits(), d.bits());
        if db == 0 || nb < db {
            return (Big::default(), !self.is_zero());
        }
        let mut rem = self.clone();
        let mut q = Big::default();
        for i in (0..=nb - db).rev() {
            let t = d.shl(i);
            if rem >= t {
                rem = rem.sub(&t);
                q.set_bit(i);
            }
        }
        (q, !rem.is_zero())
    }

    /// Decimal digits (`"0"` for zero).
    pub fn to_decimal(&self) -> String {
        let mut n = self.clone();
        let mut chunks = Vec::new();
        while !n.is_zero() {
            chunks.push(n.div_small(1_000_000_000));
        }
        let mut out = chunks.last().map_or("0".to_string(), |c| c.to_string());
        for c in chunks.iter().rev().skip(1) {
            out.push_str(&format!("{c:09}"));
        }
        out
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::Big;

    #[test]
    fn arithmetic() {
        let a = Big::pow10(30);
        assert_eq!(a.to_decimal(), format!("1{}", "0".repeat(30)));
        assert_eq!(a.shl(3).shr(3), a);
        assert_eq!(a.add(&a).sub(&a), a);
        let (q, sticky) = a.div_sticky(&Big::pow10(28));
        assert_eq!((q.low_u64(), sticky), (100, false));
        let (q, sticky) = a.add(&Big::from_u64(1)).div_sticky(&Big::pow10(28));
        assert_eq!((q.low_u64(), sticky), (100, true));
        assert_eq!(a.mul(&a), Big::pow10(60));
        assert_eq!(Big::from_u64(0).to_decimal(), "0");
        assert!(Big::from_u64(0b1000).any_below(4));
        assert!(!Big::from_u64(0b1000).any_below(3));
        assert_eq!(Big::from_u64(u64::MAX).bits(), 64);
    }
}
