//! A fast, deterministic hasher for maps keyed by small integers (ids, times, bit sets),
//! where std's SipHash guards against a flooding no one can mount on them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fx-style multiply-rotate hashing: one multiply per word.
#[derive(Default)]
pub(crate) struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // The multiply leaves a key's trailing zeros (times in whole seconds) in the low bits,
        // which pick the bucket; the well-mixed high bits are turned down into them.
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u16(&mut self, x: u16) {
        self.write_u64(u64::from(x));
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u128(&mut self, x: u128) {
        self.write_u64(x as u64);
        self.write_u64((x >> 64) as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// A `HashMap` with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn hash<T: Hash>(x: T) -> u64 {
        let mut h = FastHasher::default();
        x.hash(&mut h);
        h.finish()
    }

    #[test]
    fn keys_in_whole_seconds_spread_over_the_low_bits() {
        // Times in microseconds of whole seconds all end in six zero bits: without the final
        // rotation they would share their low bits, and so a bucket.
        let low: std::collections::BTreeSet<u64> =
            (0..1024u64).map(|s| hash(s * 1_000_000) & 1023).collect();
        assert!(low.len() > 512, "{} distinct low parts of 1024", low.len());
    }

    #[test]
    fn equal_keys_hash_equal_and_different_ones_differ() {
        assert_eq!(hash((3u16, 7u64)), hash((3u16, 7u64)));
        assert_ne!(hash((3u16, 7u64)), hash((7u16, 3u64)));
    }
}
