//! Where the trace file's newest frames end on disk, so that at the end the file can be cut back
//! to a whole frame to make space for the end record when a hard limit leaves none (see
//! `ending::write_the_rest`). Fixed-size: the writer keeps it for every frame it writes.

/// Frame ends kept: at one frame per flush interval, a few seconds of the newest frames, far more
/// than the few hundred bytes an end record needs.
const KEPT: usize = 32;

/// The file offsets just past the newest frames written, oldest overwritten first.
#[derive(Clone, Copy, Default)]
pub struct Bounds {
    ends: [u64; KEPT],
    /// How many of `ends` are in use; the newest is at `(next + KEPT - 1) % KEPT`.
    used: usize,
    next: usize,
}

impl Bounds {
    /// A frame was written, and the file now ends at `end`.
    pub fn push(&mut self, end: u64) {
        self.ends[self.next] = end;
        self.next = (self.next + 1) % KEPT;
        self.used = (self.used + 1).min(KEPT);
    }

    /// The file was cut back to `len`: frame ends past it are gone.
    pub fn forget_after(&mut self, len: u64) {
        while self.used > 0 {
            let newest = (self.next + KEPT - 1) % KEPT;
            if self.ends[newest] <= len {
                break;
            }
            self.next = newest;
            self.used -= 1;
        }
    }

    /// The newest frame end, below a file now `len` bytes long with `room` bytes more allowed, that
    /// leaves `need` bytes of room once the file is cut back to it; `None` when no frame end kept
    /// is far enough back.
    pub fn newest_leaving(&self, len: u64, room: u64, need: u64) -> Option<u64> {
        (0..self.used)
            .map(|i| self.ends[(self.next + KEPT - 1 - i) % KEPT])
            .find(|&end| end <= len && room.saturating_add(len - end) >= need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_newest_frame_end_that_leaves_the_room_needed() {
        let mut b = Bounds::default();
        for end in [100, 250, 400, 480] {
            b.push(end);
        }
        // 480 bytes on disk, 20 more allowed: an end record of 50 bytes needs 30 back.
        assert_eq!(b.newest_leaving(480, 20, 50), Some(400));
        assert_eq!(b.newest_leaving(480, 20, 20), Some(480));
        assert_eq!(b.newest_leaving(480, 0, 300), Some(100));
        assert_eq!(b.newest_leaving(480, 0, 481), None);
        b.forget_after(300);
        assert_eq!(b.newest_leaving(250, 0, 10), Some(100));
    }

    #[test]
    fn keeps_only_the_newest() {
        let mut b = Bounds::default();
        for end in 1..=(KEPT as u64 + 10) {
            b.push(end * 10);
        }
        let oldest = 11 * 10;
        assert_eq!(b.newest_leaving(420, 0, 420 - oldest), Some(oldest));
        assert_eq!(b.newest_leaving(420, 0, 420 - oldest + 1), None);
        b.forget_after(0);
        assert_eq!(b.newest_leaving(420, 0, 1), None);
    }
}
