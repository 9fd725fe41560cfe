//! For each of a sorted list of addresses (the freed blocks the holes analysis follows), the live
//! block that starts nearest at or below it and the one that starts nearest above it, from the
//! live blocks in any order. What this replaces was sorting the whole live set: as many (address,
//! size) pairs as blocks live, millions, at every snapshot; here the live blocks are read once and
//! what is kept is per address asked about, plus one summary per 64 KiB of address space that holds
//! live blocks but no asked address.
//!
//! Never: allocate per live block, or answer differently from a sorted search of the live set.
use rustc_hash::FxHashMap as HashMap;

/// Addresses are grouped by this many low bits.
const BUCKET_BITS: u32 = 16;

/// What a 64 KiB bucket of address space holds.
enum Bucket {
    /// Asked addresses: the range of them in the sorted list.
    Asked { lo: u32, hi: u32 },
    /// Live blocks only: the highest start (with its size) and the lowest.
    Live { top: (u64, u64), bottom: u64 },
}

/// The nearest live blocks of one asked address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nearest {
    /// The live block (start, size) with the highest start at or below the address.
    pub below: Option<(u64, u64)>,
    /// The lowest start of a live block above the address.
    pub above: Option<u64>,
}

/// Live blocks searched for together.
const BATCH: usize = 32;

/// Offers a live block to the asked addresses from index `p` on (at or above its start, `top`) and
/// to those before `p` (below it, `bottom`): `near[p]` and `near[p - 1]` keep the best so far.
fn offer(near: &mut [Nearest], p: usize, top: (u64, u64), bottom: u64) {
    if let Some(b) = near.get_mut(p).map(|e| &mut e.below) {
        if b.is_none_or(|b| b.0 < top.0) {
            *b = Some(top);
        }
    }
    if let Some(a) = p
        .checked_sub(1)
        .and_then(|q| near.get_mut(q))
        .map(|e| &mut e.above)
    {
        if a.is_none_or(|a| a > bottom) {
            *a = Some(bottom);
        }
    }
}

/// Where a search of the asked addresses `lo..hi` of one bucket for `start` begins: as if they
/// were spread evenly over the bucket (heap addresses mostly are), so the search ends within a few
/// entries of it, in the cache line fetched ahead, instead of a binary search's chain of misses.
fn guess(lo: usize, hi: usize, start: u64) -> usize {
    let within = start & ((1 << BUCKET_BITS) - 1);
    lo + ((within as usize * (hi - lo)) >> BUCKET_BITS)
}

/// How many entries either side of the guess are searched before the rest of the range.
const NEAR: usize = 8;

/// `lo` plus the number of asked addresses in `lo..hi` below `start`, searched from index `g`
/// (in `lo..hi`, which is not empty): what `partition_point` over the range gives.
fn position(asked: &[u64], lo: usize, hi: usize, g: usize, start: u64) -> usize {
    let below = |a: &u64| *a < start;
    if asked[g] < start {
        // The answer is in g + 1..=hi.
        let end = (g + 1 + NEAR).min(hi);
        let q = g + 1 + asked[g + 1..end].partition_point(below);
        if q < end {
            q
        } else {
            end + asked[end..hi].partition_point(below)
        }
    } else {
        // The answer is in lo..=g.
        let begin = g.saturating_sub(NEAR).max(lo);
        let q = begin + asked[begin..g].partition_point(below);
        if q > begin || begin == lo {
            q
        } else {
            lo + asked[lo..begin].partition_point(below)
        }
    }
}

/// Offers the `waiting` live blocks (start, size, and the range of asked addresses in their
/// bucket): finds where each goes, fetching its entries, then offers them all.
fn settle(
    asked: &[u64],
    near: &mut [Nearest],
    waiting: &mut Vec<(u64, u64, usize, usize)>,
    placed: &mut Vec<(usize, u64, u64)>,
) {
    for &(start, size, lo, hi) in waiting.iter() {
        // Asked addresses below this start: every one before the bucket and these.
        let p = position(asked, lo, hi, guess(lo, hi, start), start);
        if let Some(e) = near.get(p.saturating_sub(1)) {
            super::prefetch::prefetch(e);
        }
        placed.push((p, start, size));
    }
    for &(p, start, size) in placed.iter() {
        offer(near, p, (start, size), start);
    }
    waiting.clear();
    placed.clear();
}

/// For each address of `asked` (sorted, distinct), its nearest live blocks among `live` (start,
/// size; distinct starts).
pub fn nearest(asked: &[u64], live: impl Iterator<Item = (u64, u64)>) -> Vec<Nearest> {
    let n = asked.len();
    let mut buckets: HashMap<u64, Bucket> = HashMap::default();
    let mut lo = 0;
    while lo < n {
        let b = asked[lo] >> BUCKET_BITS;
        let hi = lo + asked[lo..].partition_point(|&a| a >> BUCKET_BITS == b);
        buckets.insert(
            b,
            Bucket::Asked {
                lo: lo as u32,
                hi: hi as u32,
            },
        );
        lo = hi;
    }
    // `near[p].below`: the best block for every asked address from index p on (those at or above
    // its start); `near[p].above`: for every one up to index p. Spread over all of them at the end.
    // One array, so that the two entries a live block updates, p and p - 1, share a cache line.
    let mut near = vec![Nearest::default(); n];
    // Live blocks in buckets of asked addresses wait in a batch: their searches and the entries
    // they update are random reads of arrays larger than the cache, fetched ahead a batch at a time.
    let mut waiting: Vec<(u64, u64, usize, usize)> = Vec::with_capacity(BATCH);
    let mut placed: Vec<(usize, u64, u64)> = Vec::with_capacity(BATCH);
    for (start, size) in live {
        let b = start >> BUCKET_BITS;
        match buckets.get_mut(&b) {
            Some(Bucket::Asked { lo, hi }) => {
                let (lo, hi) = (*lo as usize, *hi as usize);
                super::prefetch::prefetch(&asked[guess(lo, hi, start)]);
                waiting.push((start, size, lo, hi));
                if waiting.len() == BATCH {
                    settle(asked, &mut near, &mut waiting, &mut placed);
                }
            }
            Some(Bucket::Live { top, bottom }) => {
                if start > top.0 {
                    *top = (start, size);
                }
                *bottom = (*bottom).min(start);
            }
            None => {
                buckets.insert(
                    b,
                    Bucket::Live {
                        top: (start, size),
                        bottom: start,
                    },
                );
            }
        }
    }
    settle(asked, &mut near, &mut waiting, &mut placed);
    for (&b, bucket) in &buckets {
        if let Bucket::Live { top, bottom } = *bucket {
            // No asked address in this bucket: those below it are those of lower buckets.
            let p = asked.partition_point(|&a| a >> BUCKET_BITS < b);
            offer(&mut near, p, top, bottom);
        }
    }
    for p in 1..n {
        if let Some(prev) = near[p - 1].below {
            if near[p].below.is_none_or(|b| b.0 < prev.0) {
                near[p].below = Some(prev);
            }
        }
    }
    for p in (0..n.saturating_sub(1)).rev() {
        if let Some(next) = near[p + 1].above {
            if near[p].above.is_none_or(|a| a > next) {
                near[p].above = Some(next);
            }
        }
    }
    near
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: a sorted search of the whole live set.
    fn by_sorting(asked: &[u64], live: &[(u64, u64)]) -> Vec<Nearest> {
        let mut live = live.to_vec();
        live.sort_unstable();
        asked
            .iter()
            .map(|&a| {
                let i = live.partition_point(|b| b.0 <= a);
                Nearest {
                    below: i.checked_sub(1).map(|j| live[j]),
                    above: live.get(i).map(|b| b.0),
                }
            })
            .collect()
    }

    #[test]
    fn a_search_from_any_guess_finds_what_a_binary_search_does() {
        // Even, clustered and single addresses; every start around them; every guess.
        let ranges: [Vec<u64>; 3] = [
            (0..40).map(|i| 1000 + 50 * i).collect(),
            (0..30)
                .map(|i| 5000 + i)
                .chain((0..10).map(|i| 60_000 + i))
                .collect(),
            vec![7],
        ];
        for asked in &ranges {
            let (lo, hi) = (0, asked.len());
            for start in (0..asked[hi - 1] + 3).step_by(3) {
                let want = asked.partition_point(|&a| a < start);
                for g in lo..hi {
                    assert_eq!(position(asked, lo, hi, g, start), want, "{start} from {g}");
                }
                assert!((lo..hi).contains(&guess(lo, hi, start)));
            }
        }
    }

    #[test]
    fn agrees_with_sorting_the_live_set() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..40u64 {
            // Dense and sparse address ranges, so some buckets hold only asked addresses, some only
            // live blocks, some both, and some asked addresses have no live block on one side.
            let span = [1u64 << 12, 1 << 18, 1 << 24, 1 << 34][(round % 4) as usize];
            let mut all: Vec<u64> = (0..(1 + next() % 3000)).map(|_| next() % span).collect();
            all.sort_unstable();
            all.dedup();
            let (mut asked, mut live) = (Vec::new(), Vec::new());
            for a in all {
                if next() % 3 == 0 {
                    asked.push(a);
                } else {
                    live.push((a, next() % 5000));
                }
            }
            if round % 5 == 0 {
                asked.clear();
            }
            if round % 7 == 0 {
                live.clear();
            }
            // A live block at an asked address counts as below it.
            if let (Some(&a), 1) = (asked.first(), round % 3) {
                live.push((a, 16));
            }
            let want = by_sorting(&asked, &live);
            let mut shuffled = live.clone();
            shuffled.reverse();
            assert_eq!(nearest(&asked, shuffled.into_iter()), want, "round {round}");
        }
    }
}
