//! The one error type of the trace crate. Messages are whole sentences that say what is wrong with the
//! trace and, where there is one, what to do.
use std::fmt;
use std::io;

/// Why a trace could not be read or written.
#[derive(Debug)]
pub enum Error {
    /// The input has no bytes at all.
    Empty,
    /// The input does not begin with the memshim magic.
    NotATrace {
        /// The first bytes that were found instead (at most eight).
        found: Vec<u8>,
    },
    /// The trace was written by a newer (or unknown) format version.
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The newest version this reader knows.
        known: u32,
    },
    /// The input ends inside the header.
    HeaderTruncated,
    /// The header is present but cannot be decoded.
    CorruptHeader(String),
    /// A complete frame failed its checks (marker, length, checksum, decompression or decoding).
    CorruptFrame {
        /// Byte offset of the frame in the trace.
        offset: u64,
        /// What was wrong with it.
        why: String,
    },
    /// The underlying reader or writer failed.
    Io(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Empty => write!(
                f,
                "the trace is empty (0 bytes); the process may have been killed before the shim wrote its header"
            ),
            Error::NotATrace { found } => write!(
                f,
                "this is not a memshim trace: it starts with {:02x?} instead of \"MEMSHIM\"",
                found
            ),
            Error::UnsupportedVersion { found, known } => write!(
                f,
                "the trace has format version {found}, but this memshim reads versions 1 to {known}; use a memshim at least as new as the shim that wrote it"
            ),
            Error::HeaderTruncated => write!(
                f,
                "the trace ends inside its header; the process was killed before the header was complete, so there is nothing to report"
            ),
            Error::CorruptHeader(why) => write!(f, "the trace header is corrupt: {why}"),
            Error::CorruptFrame { offset, why } => write!(
                f,
                "the trace is corrupt at byte {offset}: {why}; everything before it was read, but the file has been damaged or overwritten"
            ),
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}
