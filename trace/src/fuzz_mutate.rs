//! The short fuzz pass that the test suite runs on every machine, where cargo-fuzz (nightly) is not:
//! a deterministic mutator that changes a real trace in a few places (a flipped bit, a length made
//! huge or zero, a cut, a piece deleted, repeated or inserted), so that every run of `cargo test`
//! feeds the readers inputs no committed corpus holds. The same seed gives the same inputs, so a
//! failure names the input that caused it and reproduces.
//!
//! Never: take input from outside the tests; this is a test aid, not a fuzzer (no coverage feedback).

/// Values that sit at the edges of what a length or count field can hold.
const EDGES_32: [u32; 6] = [0, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, 0xffff_ffff];
const EDGES_8: [u8; 5] = [0, 1, 0x7f, 0x80, 0xff];

/// A xorshift64* generator and the mutations it picks.
pub struct Mutator {
    state: u64,
}

impl Mutator {
    /// A mutator whose choices follow from `seed` alone.
    pub fn new(seed: u64) -> Mutator {
        Mutator {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        }
    }

    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// `input` changed in one to four places.
    pub fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        let mut v = input.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(v.len());
            match self.below(8) {
                0 if !v.is_empty() => v[at] ^= 1 << self.below(8),
                1 if !v.is_empty() => v[at] = EDGES_8[self.below(EDGES_8.len())],
                2 if v.len() >= 4 => {
                    let at = self.below(v.len() - 3);
                    let e = EDGES_32[self.below(EDGES_32.len())];
                    v[at..at + 4].copy_from_slice(&e.to_le_bytes());
                }
                3 if v.len() >= 8 => {
                    let at = self.below(v.len() - 7);
                    v[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
                }
                4 => v.truncate(at),
                5 => {
                    let len = self.below(64).min(v.len() - at);
                    v.drain(at..at + len);
                }
                6 => {
                    let len = self.below(256).min(v.len() - at);
                    let piece = v[at..at + len].to_vec();
                    let to = self.below(v.len() + 1);
                    v.splice(to..to, piece);
                }
                _ => {
                    let len = 1 + self.below(16);
                    let bytes: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
                    v.splice(at..at, bytes);
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let input: Vec<u8> = (0..=255).collect();
        let a: Vec<Vec<u8>> = {
            let mut m = Mutator::new(7);
            (0..50).map(|_| m.mutate(&input)).collect()
        };
        let mut m = Mutator::new(7);
        for want in &a {
            assert_eq!(&m.mutate(&input), want);
        }
        assert!(a.iter().filter(|v| *v != &input).count() > 40);
    }

    #[test]
    fn an_empty_input_is_grown_not_refused() {
        let mut m = Mutator::new(3);
        for _ in 0..100 {
            let _ = m.mutate(&[]);
        }
    }
}
