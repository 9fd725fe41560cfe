//! The writer's pace: how many messages one poll takes at most, and how long it naps between polls:
//! short while events flood in, long when they trickle or stop. Every wake-up is a context switch
//! the program's threads may feel on a machine with few cores, and the writer never parks on the
//! channel (see the module note of `writer`).
use std::time::Duration;

/// Messages taken from the queue between looks at the clock (at most a few milliseconds' worth).
pub(super) const DRAIN: usize = 4096;
/// The writer's shortest nap between polls, while events flood in: short enough that the channel
/// (64K messages) never fills at millions of events a second.
pub(super) const NAP: Duration = Duration::from_micros(200);
/// The longest nap, when few or no events come: an idle process wakes the writer 200 times a
/// second, and producers that start again fill at most a few milliseconds of the channel first.
const IDLE_NAP: Duration = Duration::from_millis(5);
/// Messages per poll below which the nap doubles (a trickle: sampled events, CUDA calls), and above
/// which it halves.
const FEW: usize = 64;
const MANY: usize = DRAIN / 4;

/// The nap after a poll that took `taken` messages: doubled (up to [`IDLE_NAP`]) when only a trickle
/// came, halved (down to [`NAP`]) when many did.
pub(super) fn next_nap(nap: Duration, taken: usize) -> Duration {
    if taken >= MANY {
        (nap / 2).max(NAP)
    } else if taken < FEW {
        (nap * 2).min(IDLE_NAP)
    } else {
        nap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nap_follows_the_flow_between_its_bounds() {
        let mut nap = NAP;
        for _ in 0..20 {
            nap = next_nap(nap, 0);
        }
        assert_eq!(nap, IDLE_NAP, "a quiet writer naps its longest");
        assert_eq!(next_nap(nap, FEW), IDLE_NAP, "a steady flow keeps the nap");
        for _ in 0..20 {
            nap = next_nap(nap, MANY);
        }
        assert_eq!(nap, NAP, "a flood brings it down to the shortest");
        assert_eq!(next_nap(NAP * 4, DRAIN), NAP * 2);
    }
}
