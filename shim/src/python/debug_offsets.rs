//! The interpreter's own account of its layout, compared with ours before any frame is read: from
//! 3.13, `_PyRuntime` starts with a `_Py_DebugOffsets` (`Include/internal/pycore_debug_offsets.h`
//! in 3.14), written by CPython for out-of-process debuggers: a cookie, `PY_VERSION_HEX`, whether
//! the build is free-threaded, and the offsets of the fields such tools read, the ones a walk reads
//! among them. The struct itself changes between minor versions, so each layout that checks names
//! where in it each field lies (`scripts/python-layout.c` prints them from the headers).
//!
//! A mismatch is reported by name ("frame_owner is at 80 here, 74 in memshim's 3.14 layout"), which
//! says more than the live-frame check in `verify` can; that check still runs after this one.
//! Plain data and arithmetic: the caller reads the words.
use super::layout::{Layout, BYTES_DATA, BYTES_SIZE, OB_TYPE, STR_LENGTH, STR_STATE, TSTATE_NEXT};

/// "xdebugpy", the first 8 bytes of `_Py_DebugOffsets`.
const COOKIE: [u8; 8] = *b"xdebugpy";

/// Where each compared field's offset lies inside one version's `_Py_DebugOffsets`.
#[derive(Debug, PartialEq, Eq)]
pub struct DebugOffsets {
    pub version: usize,
    pub free_threaded: usize,
    pub tstate_frame: usize,
    pub tstate_next: usize,
    pub frame_previous: usize,
    pub frame_code: usize,
    pub frame_instr: usize,
    pub frame_owner: usize,
    pub code_filename: usize,
    pub code_name: usize,
    pub code_firstlineno: usize,
    pub code_linetable: usize,
    pub code_adaptive: usize,
    pub ob_type: usize,
    pub str_length: usize,
    pub str_state: usize,
    pub ascii_size: usize,
    pub bytes_size: usize,
    pub bytes_data: usize,
}

/// CPython 3.14's (the same in every patch release: the header promises that much).
pub static PY314: DebugOffsets = DebugOffsets {
    version: 8,
    free_threaded: 16,
    tstate_frame: 208,
    tstate_next: 192,
    frame_previous: 256,
    frame_code: 264,
    frame_instr: 272,
    frame_owner: 288,
    code_filename: 320,
    code_name: 336,
    code_firstlineno: 352,
    code_linetable: 344,
    code_adaptive: 384,
    ob_type: 408,
    str_length: 632,
    str_state: 624,
    ascii_size: 640,
    bytes_size: 600,
    bytes_data: 608,
};

/// Where the fields a walk reads lie in CPython 3.`minor`'s own `_Py_DebugOffsets`, for the
/// versions whose layout is compared with it before frames are read.
pub fn for_minor(minor: u32) -> Option<&'static DebugOffsets> {
    (minor == 14).then_some(&PY314)
}

impl DebugOffsets {
    /// Each field compared: its name, where the interpreter's own offset of it lies in
    /// `_Py_DebugOffsets`, and the offset memshim's layout `l` uses.
    pub fn fields(&self, l: &Layout) -> Result<[(&'static str, usize, usize); 17], String> {
        let owner = match l.chain {
            super::layout::Chain::EntryFrames { owner, .. } => owner,
            _ => return Err("memshim has no entry-frame layout to compare".into()),
        };
        Ok([
            ("tstate_frame", self.tstate_frame, l.tstate_frame),
            ("tstate_next", self.tstate_next, TSTATE_NEXT),
            ("frame_previous", self.frame_previous, l.frame_previous),
            ("frame_code", self.frame_code, l.frame_code),
            (
                "frame_instr",
                self.frame_instr,
                l.frame_instr().unwrap_or(usize::MAX),
            ),
            ("frame_owner", self.frame_owner, owner),
            ("code_filename", self.code_filename, l.code_filename),
            ("code_name", self.code_name, l.code_name),
            (
                "code_firstlineno",
                self.code_firstlineno,
                l.code_firstlineno,
            ),
            (
                "code_linetable",
                self.code_linetable,
                l.code_linetable.unwrap_or(usize::MAX),
            ),
            (
                "code_adaptive",
                self.code_adaptive,
                l.code_adaptive.unwrap_or(usize::MAX),
            ),
            ("ob_type", self.ob_type, OB_TYPE),
            ("str_length", self.str_length, STR_LENGTH),
            ("str_state", self.str_state, STR_STATE),
            ("ascii_size", self.ascii_size, l.ascii_size),
            ("bytes_size", self.bytes_size, BYTES_SIZE),
            ("bytes_data", self.bytes_data, BYTES_DATA),
        ])
    }

    /// Compares the `_Py_DebugOffsets` that `read` reads (the 8 bytes at an offset into
    /// `_PyRuntime`) with `l`; the reason to leave frames off when they differ.
    pub fn check(&self, l: &Layout, read: impl Fn(usize) -> Option<u64>) -> Result<(), String> {
        let unreadable = || "its _PyRuntime could not be read".to_string();
        if read(0).ok_or_else(unreadable)? != u64::from_ne_bytes(COOKIE) {
            return Err("its _PyRuntime does not start with CPython's debug offsets".into());
        }
        let hex = read(self.version).ok_or_else(unreadable)?;
        if (hex >> 24, (hex >> 16) & 0xff) != (3, u64::from(l.minor)) {
            return Err(format!(
                "its debug offsets are those of version {:#x}, not 3.{}",
                hex, l.minor
            ));
        }
        if read(self.free_threaded).ok_or_else(unreadable)? != 0 {
            return Err(
                "it is a free-threaded build: memshim reads the frames of the default (GIL) build only"
                    .into(),
            );
        }
        let expected = self.fields(l)?;
        for (name, at, want) in expected {
            let got = read(at).ok_or_else(unreadable)?;
            if got != want as u64 {
                return Err(format!(
                    "its debug offsets put {name} at {got}, memshim's 3.{} layout at {want}: a debug \
                     or otherwise modified build?",
                    l.minor
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::for_minor;
    use super::*;

    /// A `_Py_DebugOffsets` as a 3.14 default build writes it.
    fn fake(l: &Layout) -> Vec<u64> {
        let d = &PY314;
        let mut w = vec![0u64; 128];
        w[0] = u64::from_ne_bytes(COOKIE);
        w[d.version / 8] = 0x030e_0af0;
        for (_, at, v) in d.fields(l).expect("3.14 has entry frames") {
            w[at / 8] = v as u64;
        }
        w
    }

    fn check(w: &[u64]) -> Result<(), String> {
        let l = for_minor(14).unwrap();
        PY314.check(l, |at| w.get(at / 8).copied())
    }

    #[test]
    fn a_default_build_checks_out() {
        let l = for_minor(14).unwrap();
        assert_eq!(super::for_minor(l.minor), Some(&PY314));
        assert_eq!(check(&fake(l)), Ok(()));
    }

    #[test]
    fn a_free_threaded_build_is_named() {
        let mut w = fake(for_minor(14).unwrap());
        w[PY314.free_threaded / 8] = 1;
        assert!(check(&w).unwrap_err().contains("free-threaded"));
    }

    #[test]
    fn a_moved_field_is_named_with_both_offsets() {
        let mut w = fake(for_minor(14).unwrap());
        w[PY314.frame_owner / 8] = 80;
        let why = check(&w).unwrap_err();
        assert!(why.contains("frame_owner at 80"), "{why}");
        assert!(why.contains("3.14 layout at 74"), "{why}");
    }

    #[test]
    fn another_version_or_no_cookie_is_refused() {
        let l = for_minor(14).unwrap();
        let mut w = fake(l);
        w[PY314.version / 8] = 0x030d_05f0;
        assert!(check(&w).unwrap_err().contains("not 3.14"));
        let mut w = fake(l);
        w[0] = 0;
        assert!(check(&w).unwrap_err().contains("does not start"));
        assert!(PY314.check(l, |_| None).is_err());
    }
}
