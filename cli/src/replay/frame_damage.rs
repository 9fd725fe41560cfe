//! What a trace's frame numbers (format version 8) say about its integrity: frames that appear twice
//! (read once), frames missing between others, and heap events lost with them. Never guesses: an
//! older trace, which has no numbers, reports nothing here.

/// What the frame numbers (format version 8) say about a trace's integrity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameDamage {
    pub duplicate_frames: u64,
    pub missing_frames: u64,
    pub unresolved_events: u64,
}

impl FrameDamage {
    /// The warning to give, if any.
    pub fn warning(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.duplicate_frames > 0 {
            parts.push(format!(
                "{} frame(s) appear twice in the file and were read once",
                self.duplicate_frames
            ));
        }
        if self.missing_frames > 0 {
            parts.push(format!(
                "{} frame(s) are missing between the ones read, so the counts are low",
                self.missing_frames
            ));
        }
        if self.unresolved_events > 0 {
            parts.push(format!(
                "{} heap event(s) refer to blocks of missing frames and were left out",
                self.unresolved_events
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undamaged_trace_has_no_warning_and_a_damaged_one_names_every_count() {
        assert_eq!(FrameDamage::default().warning(), None);
        let d = FrameDamage {
            duplicate_frames: 2,
            missing_frames: 1,
            unresolved_events: 7,
        };
        assert_eq!(
            d.warning().as_deref(),
            Some("2 frame(s) appear twice in the file and were read once; 1 frame(s) are missing between the ones read, so the counts are low; 7 heap event(s) refer to blocks of missing frames and were left out")
        );
    }
}
