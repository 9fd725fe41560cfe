//! Where a file's data lies: `lseek`'s `SEEK_DATA` and `SEEK_HOLE`, so that the unwritten room the
//! shim leaves at a trace's end (a gigabyte set aside past a file-size limit, never written when the
//! process was killed) is found to be a hole without reading it. Reading it would fill a gigabyte of
//! page cache with zeros, seconds on a busy machine.
//!
//! On a file system without holes the answers say "all data", and the caller reads, as before.
//!
//! # Safety
//! The one block calls `lseek` on a descriptor the `File` owns and keeps open for the call; it moves
//! only that descriptor's offset, which the callers here do not rely on (they seek again before they
//! read).
#![allow(unsafe_code)]
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

fn seek(file: &File, from: u64, whence: libc::c_int) -> io::Result<Option<u64>> {
    let Ok(from) = libc::off_t::try_from(from) else {
        return Ok(None);
    };
    // SAFETY: see the module's overview; the descriptor is valid while `file` is borrowed.
    let at = unsafe { libc::lseek(file.as_raw_fd(), from, whence) };
    if at >= 0 {
        return Ok(Some(at as u64));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // No data at or after `from`.
        Some(libc::ENXIO) => Ok(None),
        _ => Err(e),
    }
}

/// The ranges of `file` from `from` on that may hold data, as (start, end): one range to the end of
/// the file where the file system cannot tell.
pub fn data_ranges(file: &File, from: u64) -> io::Result<Vec<(u64, u64)>> {
    let len = file.metadata()?.len();
    let mut out = Vec::new();
    let mut at = from;
    while at < len {
        let start = match seek(file, at, libc::SEEK_DATA) {
            Ok(Some(s)) => s,
            Ok(None) => break,
            // SEEK_DATA unknown here: all of it may be data.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                out.push((at, len));
                break;
            }
            Err(e) => return Err(e),
        };
        let end = seek(file, start, libc::SEEK_HOLE)?.unwrap_or(len).min(len);
        if end <= start {
            break;
        }
        out.push((start, end));
        at = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    #[test]
    fn a_file_grown_with_set_len_past_its_data_has_no_data_there() {
        let dir = std::env::temp_dir().join(format!("memshim-holes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sparse");
        let mut f = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        f.write_all(&[7u8; 8192]).unwrap();
        f.set_len(1 << 30).unwrap();
        // Past the data: nothing, or (a file system without holes) one range to the end.
        let after = data_ranges(&f, 8192).unwrap();
        assert!(after.is_empty() || after == [(8192, 1 << 30)], "{after:?}");
        // Data written far into the room is found.
        f.seek(SeekFrom::Start(512 << 20)).unwrap();
        f.write_all(&[1u8; 4096]).unwrap();
        let found = data_ranges(&f, 8192).unwrap();
        assert!(
            found
                .iter()
                .any(|&(s, e)| s <= 512 << 20 && e >= (512 << 20) + 4096),
            "{found:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
