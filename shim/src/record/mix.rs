//! MurmurHash3's 64-bit finaliser (`fmix64`): every output bit depends on every input bit, so a value
//! whose entropy sits in a few bits (a heap address, a clock reading) picks table slots evenly and
//! seeds a random sequence well.

/// The finaliser of MurmurHash3: a well-mixed hash of `z`.
#[inline(always)]
pub fn mix(mut z: u64) -> u64 {
    z ^= z >> 33;
    z = z.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    z ^= z >> 33;
    z = z.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    z ^ (z >> 33)
}

#[cfg(test)]
mod tests {
    #[test]
    fn neighbouring_addresses_land_far_apart() {
        // Heap blocks 16 bytes apart differ in one low bit: their hashes differ in about half.
        let (a, b) = (super::mix(0x5555_0000_1000), super::mix(0x5555_0000_1010));
        let differing = (a ^ b).count_ones();
        assert!((16..=48).contains(&differing), "{differing} bits differ");
        assert_eq!(super::mix(0), 0, "the finaliser keeps 0 at 0");
    }
}
