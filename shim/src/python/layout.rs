//! Where CPython keeps what a stack walk reads, for each supported minor version (x86-64 Linux,
//! release builds). Plain data: nothing here reads memory.
//!
//! The offsets come from CPython's headers (`Include/cpython/pystate.h`, `Include/internal/
//! pycore_frame.h` or, from 3.14, `pycore_interpframe_structs.h`, `Include/cpython/code.h`,
//! `Include/cpython/unicodeobject.h`) of each version; `scripts/python-layout.c` prints them from an
//! installed interpreter's headers and the `layout_probe` test compares. A debug or free-threaded
//! build lays them out differently: the runtime check in `verify` catches that and turns Python
//! frames off instead of reading the wrong words (from 3.14 the interpreter's own debug offsets are
//! compared first, see `debug_offsets::for_minor`).

/// How a thread's frames are chained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chain {
    /// 3.9 and 3.10: `tstate->frame` is a `PyFrameObject`, chained by `f_back`; every Python call is
    /// its own `_PyEval_EvalFrameDefault` invocation.
    FrameObjects,
    /// 3.11: `tstate->cframe->current_frame` is a `_PyInterpreterFrame`; a frame whose `is_entry` is
    /// set is the first one its `_PyEval_EvalFrameDefault` invocation ran.
    EntryFlag {
        cframe_current: usize,
        is_entry: usize,
    },
    /// 3.12 (through `cframe`), 3.13 and 3.14 (directly): each `_PyEval_EvalFrameDefault`
    /// invocation pushes an entry frame below the frames it runs, told by its `owner` byte.
    EntryFrames {
        cframe_current: Option<usize>,
        owner: usize,
        /// The entry frame's owner: `FRAME_OWNED_BY_CSTACK` (3) in 3.12 and 3.13. 3.14 inserted
        /// `FRAME_OWNED_BY_INTERPRETER` at 3, moving `FRAME_OWNED_BY_CSTACK` to 4, and gives the
        /// entry frame the new one: still 3 (4 is assigned to no frame there).
        owned_by_cstack: u8,
    },
}

/// How the line a frame is on is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// `PyCode_Addr2Line(code, f_lasti * scale)`, `f_lasti` an `int` at this frame offset (3.9:
    /// bytes, scale 1; 3.10: code units, scale 2).
    Lasti { offset: usize, scale: i32 },
    /// `PyCode_Addr2Line(code, prev_instr - code->co_code_adaptive)` (3.11; `prev_instr` at this
    /// frame offset, `co_code_adaptive` at [`Layout::code_adaptive`]).
    PrevInstr { offset: usize },
    /// `PyUnstable_InterpreterFrame_GetLine(frame)` (3.12 and later), keyed by the instruction
    /// pointer at this offset.
    Api { instr: usize },
}

/// One version's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The minor version (3.x).
    pub minor: u32,
    /// Offset in `PyThreadState` of the frame pointer (3.9, 3.10, 3.13, 3.14) or `cframe` (3.11,
    /// 3.12).
    pub tstate_frame: usize,
    pub chain: Chain,
    /// Offsets in a frame of its code object and of the next older frame.
    pub frame_code: usize,
    pub frame_previous: usize,
    /// Low bits of the word at `frame_code` that are tags, not address: 3.14's `f_executable` is a
    /// `_PyStackRef` (`Py_TAG_BITS`, 3 in the default build; the code object of a frame can carry
    /// `Py_TAG_REFCNT`, and an entry frame's `None` does).
    pub frame_code_tags: usize,
    pub line: Line,
    /// Offsets in `PyCodeObject`.
    pub code_filename: usize,
    /// The qualified name where the version has one (3.11+), else the name.
    pub code_name: usize,
    pub code_firstlineno: usize,
    /// 3.11+: `co_linetable` (a bytes object) and `co_code_adaptive` (the first instruction), to find
    /// a frame's line without calling into the interpreter.
    pub code_linetable: Option<usize>,
    pub code_adaptive: Option<usize>,
    /// `sizeof(PyASCIIObject)` and `sizeof(PyCompactUnicodeObject)`: where a compact string's
    /// characters start.
    pub ascii_size: usize,
    pub compact_size: usize,
}

/// `PyObject.ob_type`.
pub const OB_TYPE: usize = 8;
/// `PyASCIIObject.length` and `.state` (the same in every supported version).
pub const STR_LENGTH: usize = 16;
pub const STR_STATE: usize = 32;

/// `PyThreadState.next` (the same in every supported version).
pub const TSTATE_NEXT: usize = 8;

/// `PyBytesObject`: its length and where its bytes start (the same in every supported version).
pub const BYTES_SIZE: usize = 16;
pub const BYTES_DATA: usize = 32;

impl Layout {
    /// Offset in a frame of its instruction pointer (3.11+).
    pub fn frame_instr(&self) -> Option<usize> {
        match self.line {
            Line::PrevInstr { offset } | Line::Api { instr: offset } => Some(offset),
            Line::Lasti { .. } => None,
        }
    }
}

/// The layout for CPython 3.`minor`, if it is supported.
pub fn for_minor(minor: u32) -> Option<&'static Layout> {
    LAYOUTS.iter().find(|l| l.minor == minor)
}

/// The supported minor versions, for messages.
pub fn supported() -> String {
    let v: Vec<String> = LAYOUTS.iter().map(|l| format!("3.{}", l.minor)).collect();
    v.join(", ")
}

static LAYOUTS: [Layout; 6] = [
    Layout {
        minor: 9,
        tstate_frame: 24,
        chain: Chain::FrameObjects,
        frame_code: 32,
        frame_code_tags: 0,
        frame_previous: 24,
        line: Line::Lasti {
            offset: 104,
            scale: 1,
        },
        code_filename: 104,
        code_name: 112,
        code_firstlineno: 40,
        code_linetable: None,
        code_adaptive: None,
        ascii_size: 48,
        compact_size: 72,
    },
    Layout {
        minor: 10,
        tstate_frame: 24,
        chain: Chain::FrameObjects,
        frame_code: 32,
        frame_code_tags: 0,
        frame_previous: 24,
        line: Line::Lasti {
            offset: 96,
            scale: 2,
        },
        code_filename: 104,
        code_name: 112,
        code_firstlineno: 40,
        code_linetable: None,
        code_adaptive: None,
        ascii_size: 48,
        compact_size: 72,
    },
    Layout {
        minor: 11,
        tstate_frame: 56,
        chain: Chain::EntryFlag {
            cframe_current: 8,
            is_entry: 68,
        },
        frame_code: 32,
        frame_code_tags: 0,
        frame_previous: 48,
        line: Line::PrevInstr { offset: 56 },
        code_filename: 112,
        code_name: 128,
        code_firstlineno: 72,
        code_linetable: Some(136),
        code_adaptive: Some(184),
        ascii_size: 48,
        compact_size: 72,
    },
    Layout {
        minor: 12,
        tstate_frame: 56,
        chain: Chain::EntryFrames {
            cframe_current: Some(0),
            owner: 70,
            owned_by_cstack: 3,
        },
        frame_code: 0,
        frame_code_tags: 0,
        frame_previous: 8,
        line: Line::Api { instr: 56 },
        code_filename: 112,
        code_name: 128,
        code_firstlineno: 68,
        code_linetable: Some(136),
        code_adaptive: Some(192),
        ascii_size: 40,
        compact_size: 56,
    },
    Layout {
        minor: 13,
        tstate_frame: 72,
        chain: Chain::EntryFrames {
            cframe_current: None,
            owner: 70,
            owned_by_cstack: 3,
        },
        frame_code: 0,
        frame_code_tags: 0,
        frame_previous: 8,
        line: Line::Api { instr: 56 },
        code_filename: 112,
        code_name: 128,
        code_firstlineno: 68,
        code_linetable: Some(136),
        code_adaptive: Some(200),
        ascii_size: 40,
        compact_size: 56,
    },
    Layout {
        minor: 14,
        tstate_frame: 72,
        chain: Chain::EntryFrames {
            cframe_current: None,
            owner: 74,
            owned_by_cstack: 3,
        },
        frame_code: 0,
        frame_code_tags: 3,
        frame_previous: 8,
        line: Line::Api { instr: 56 },
        code_filename: 112,
        code_name: 128,
        code_firstlineno: 68,
        code_linetable: Some(136),
        code_adaptive: Some(208),
        ascii_size: 40,
        compact_size: 56,
    },
];

/// Parses the start of `Py_GetVersion()` ("3.12.3 (main, ...)" or "3.13.0rc1 ...") into
/// (major, minor) and the version text.
pub fn parse_version(text: &str) -> Option<(u32, u32, &str)> {
    let word = text.split_whitespace().next()?;
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    Some((major, minor, word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_with_and_without_patch_and_suffix() {
        assert_eq!(
            parse_version("3.12.3 (main, Nov  6 2025) [GCC 13.3.0]"),
            Some((3, 12, "3.12.3"))
        );
        assert_eq!(parse_version("3.13.0rc1 (x)"), Some((3, 13, "3.13.0rc1")));
        assert_eq!(parse_version("3.9"), Some((3, 9, "3.9")));
        assert_eq!(parse_version(""), None);
        assert_eq!(parse_version("python"), None);
    }

    #[test]
    fn every_supported_version_has_one_layout() {
        for minor in 9..=14 {
            assert_eq!(for_minor(minor).map(|l| l.minor), Some(minor));
        }
        assert!(for_minor(8).is_none());
        assert!(for_minor(15).is_none());
        assert_eq!(supported(), "3.9, 3.10, 3.11, 3.12, 3.13, 3.14");
    }

    #[test]
    fn frame_fields_do_not_overlap() {
        for l in &LAYOUTS {
            assert_ne!(l.frame_code, l.frame_previous, "3.{}", l.minor);
            assert_ne!(l.code_filename, l.code_name, "3.{}", l.minor);
            assert!(l.compact_size > l.ascii_size, "3.{}", l.minor);
        }
    }
}
