//! Python frames: how a stack entry tells a Python frame from a return address, and the string
//! table and code objects those frames name.
use serde::{Deserialize, Serialize};

/// Bit 63 marks a stack frame as a Python frame rather than a return address: no user-space address
/// on a supported platform has it set.
pub const PYTHON_FRAME: u64 = 1 << 63;
/// Bit 62 of a Python frame: the frame is the main thread's, lent to a thread that ran no Python code.
const LENT: u64 = 1 << 62;

/// A stack frame: a native return address or a Python frame (code object and line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameRef {
    /// A return address.
    Native(u64),
    /// A Python frame: the [`PyCode`] id and the line being executed.
    Python {
        /// The code object's id.
        code: u32,
        /// The line number (0 when unknown).
        line: u32,
        /// True when the frame is the interpreter's main thread's, recorded for a native thread
        /// that ran no Python code of its own (PyTorch's autograd engine, say).
        lent: bool,
    },
}

impl FrameRef {
    /// The frame a stack entry stands for.
    pub fn decode(frame: u64) -> FrameRef {
        if frame & PYTHON_FRAME == 0 {
            FrameRef::Native(frame)
        } else {
            FrameRef::Python {
                code: ((frame >> 32) & 0x3FFF_FFFF) as u32,
                line: frame as u32,
                lent: frame & LENT != 0,
            }
        }
    }

    /// The stack entry for a Python frame of the thread itself (code ids above 2^30 - 1 wrap; the
    /// shim never issues them).
    pub fn python(code: u32, line: u32) -> u64 {
        PYTHON_FRAME | (u64::from(code & 0x3FFF_FFFF) << 32) | u64::from(line)
    }

    /// The stack entry for a frame lent by the main thread.
    pub fn python_lent(code: u32, line: u32) -> u64 {
        FrameRef::python(code, line) | LENT
    }
}

/// One string of the trace's string table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyString {
    /// The id [`PyCode`] records use.
    pub id: u32,
    /// The text.
    pub text: String,
}

/// A Python code object, by its names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyCode {
    /// The id Python frames carry.
    pub id: u32,
    /// The string id of its qualified name (`Class.method`; the plain name before Python 3.11).
    pub name: u32,
    /// The string id of its file name.
    pub file: u32,
    /// The line its definition starts on.
    pub first_line: u32,
}

/// The interpreter found in the process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonRuntime {
    /// Its version (`3.12.3`).
    pub version: String,
    /// True when stacks carry its frames.
    pub frames: bool,
    /// Why not, when they do not (an unsupported version, a layout that failed its check, turned off).
    pub reason: String,
}
