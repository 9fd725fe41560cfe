//! What a replay adds once the events are read: code objects named at last, counts by kind, Python
//! groups, the notes about what was left out, and how reading ended. Done again at every reading of
//! a trace that is still being written (`follow`): every step replaces what the last one made.
use std::path::Path;

use memshim_trace::TraceReader;

use super::apply::define_code;
use super::frame_damage::FrameDamage;
use super::replayed::{Replayed, MAX_MODULES, MAX_NOTES};
use super::Detail;

/// How reading a trace ended.
pub(super) struct ReadEnd {
    pub truncated: bool,
    pub corrupt: Option<String>,
    pub complete_bytes: u64,
    pub unwritten_tail: bool,
    pub resume: memshim_trace::Resume,
    pub damage: FrameDamage,
}

/// How `reader` ended, `truncated` or not, stopped by `corrupt` or not.
pub(super) fn read_end<R: std::io::Read>(
    reader: &TraceReader<R>,
    truncated: bool,
    corrupt: Option<String>,
) -> ReadEnd {
    ReadEnd {
        truncated,
        corrupt,
        complete_bytes: reader.offset(),
        unwritten_tail: reader.unwritten_tail(),
        resume: reader.resume(),
        damage: FrameDamage {
            duplicate_frames: reader.duplicate_frames(),
            missing_frames: reader.missing_frames(),
            unresolved_events: reader.unresolved_events(),
        },
    }
}

/// Completes `r` after reading `path` up to `end`; `window_note` says the time window its events
/// were filtered by, if they were. Appends notes: a caller that finishes again first takes them
/// back. With `detail` [`Detail::Symbols`] the sites are not grouped by Python location: only
/// reports group them.
pub(super) fn finish(
    r: &mut Replayed,
    end: ReadEnd,
    window_note: Option<String>,
    path: &Path,
    detail: Detail,
) {
    for c in std::mem::take(&mut r.py_pending) {
        define_code(r, c);
    }
    r.counts = r.kinds.clone().into_map();
    if detail == Detail::Full {
        r.py_keys = crate::analysis::python_sites::location_keys(&r.stacks);
        r.py_groups = crate::analysis::python_sites::groups(&r.py_keys);
    }
    r.notes.extend(window_note);
    if r.left_out.notes > 0 {
        r.notes.push(format!(
            "{} more notes from the shim were left out (only the first {MAX_NOTES} are kept)",
            r.left_out.notes
        ));
    }
    if r.device.failures_left_out > 0 {
        r.notes.push(format!(
            "{} more failed CUDA calls were left out (only the first {} are kept)",
            r.device.failures_left_out,
            crate::analysis::device::MAX_FAILURES
        ));
    }
    if r.left_out.modules > 0 {
        r.notes.push(format!(
            "{} module loads beyond the first {MAX_MODULES} were left out: frames in them have no names",
            r.left_out.modules
        ));
    }
    if let Some(w) = end.damage.warning() {
        r.notes.push(format!("frames damaged: {w}"));
    }
    r.frame_damage = end.damage;
    r.resume = Some(end.resume);
    r.corrupt = end.corrupt;
    r.complete_bytes = end.complete_bytes;
    r.unwritten_tail = end.unwritten_tail;
    r.truncated = end.truncated || r.corrupt.is_some();
    r.still_writing = r.truncated
        && r.end.is_none()
        && r.corrupt.is_none()
        && crate::live_writer::is_writing(path, &r.header);
}
