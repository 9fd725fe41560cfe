//! Two ways to read the interpreter's memory: directly (the hot path, once the layout is known to
//! be right) and checked through the kernel (to verify the layout once, where a wrong offset must
//! give an error, not a crash).
//!
//! # Safety
//! The direct reads dereference only addresses inside the calling thread's own interpreter frames,
//! at offsets verified once by the checked reads; the checked reads go through
//! `process_vm_readv`, which fails with `EFAULT` on an unmapped address instead of faulting.
#![allow(unsafe_code)]

/// Reads words of this process's memory.
pub trait Memory {
    /// The 8 bytes at `addr`, or `None` if they cannot be read.
    fn read8(&self, addr: usize) -> Option<[u8; 8]>;

    fn word(&self, addr: usize) -> Option<usize> {
        self.read8(addr).map(usize::from_ne_bytes)
    }

    fn u32(&self, addr: usize) -> Option<u32> {
        let b = self.read8(addr & !7)?;
        let at = addr & 7;
        (at <= 4).then(|| u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
    }

    fn u8(&self, addr: usize) -> Option<u8> {
        self.read8(addr & !7).map(|b| b[addr & 7])
    }
}

/// Plain loads. Only for addresses that the verified layout says hold live interpreter data of
/// the calling thread.
pub struct Direct;

impl Memory for Direct {
    #[inline(always)]
    fn read8(&self, addr: usize) -> Option<[u8; 8]> {
        if addr < 4096 {
            return None;
        }
        // SAFETY: the caller walks only the calling thread's own frames, which the interpreter keeps
        // alive and unchanged while this thread is inside an allocation call, through offsets that
        // `verify` checked against this very interpreter; unaligned reads are allowed on x86-64.
        Some(unsafe { std::ptr::read_unaligned(addr as *const [u8; 8]) })
    }
}

/// Reads through `process_vm_readv` on this process: an unmapped address is an error (EFAULT).
pub struct Checked;

impl Checked {
    /// Fills `buf` from `addr`; false unless every byte could be read.
    pub fn read_into(&self, addr: usize, buf: &mut [u8]) -> bool {
        crate::sys::read_own_memory(crate::record::guard::tid(), addr, buf)
    }
}

impl Memory for Checked {
    fn read8(&self, addr: usize) -> Option<[u8; 8]> {
        let mut out = [0u8; 8];
        self.read_into(addr, &mut out).then_some(out)
    }
}

/// Checked reads of whole aligned chunks, each chunk read once per walk: a lent walk reads a dozen
/// words of each frame and code object, which lie in one or two chunks, so it makes a few system
/// calls a frame instead of one a word (PyTorch's autograd thread borrows the main thread's frames
/// for every gradient it allocates). An aligned chunk never crosses a page, so a chunk is readable
/// whenever a word in it is. Lives for one walk: what it holds is as old as that walk.
pub struct Chunked {
    chunks: std::cell::RefCell<[(usize, [u8; CHUNK]); CHUNKS]>,
    next: std::cell::Cell<usize>,
}

const CHUNK: usize = 512;
const CHUNKS: usize = 8;

impl Chunked {
    pub fn new() -> Chunked {
        Chunked {
            // Address 0 is never read (see `chunk`), so it marks an empty entry.
            chunks: std::cell::RefCell::new([(0, [0; CHUNK]); CHUNKS]),
            next: std::cell::Cell::new(0),
        }
    }

    /// Fills `buf` from `addr`, through the kernel, bypassing the chunks.
    pub fn read_into(&self, addr: usize, buf: &mut [u8]) -> bool {
        Checked.read_into(addr, buf)
    }

    /// The `len` bytes at offset `at` of the chunk at `base` (`at + len <= CHUNK`), into `out`.
    fn chunk(&self, base: usize, at: usize, out: &mut [u8]) -> bool {
        if base == 0 {
            return false;
        }
        let mut chunks = self.chunks.borrow_mut();
        if let Some((_, bytes)) = chunks.iter().find(|(b, _)| *b == base) {
            out.copy_from_slice(&bytes[at..at + out.len()]);
            return true;
        }
        // Read straight into the next slot; a failed read leaves it empty.
        let i = self.next.get();
        let slot = &mut chunks[i];
        if !Checked.read_into(base, &mut slot.1) {
            slot.0 = 0;
            return false;
        }
        slot.0 = base;
        out.copy_from_slice(&slot.1[at..at + out.len()]);
        self.next.set((i + 1) % CHUNKS);
        true
    }
}

impl Memory for Chunked {
    fn read8(&self, addr: usize) -> Option<[u8; 8]> {
        let (base, at) = (addr & !(CHUNK - 1), addr & (CHUNK - 1));
        let mut out = [0u8; 8];
        let first = (CHUNK - at).min(8);
        if !self.chunk(base, at, &mut out[..first]) {
            return None;
        }
        if first < 8 && !self.chunk(base.checked_add(CHUNK)?, 0, &mut out[first..]) {
            return None;
        }
        Some(out)
    }
}

impl Default for Chunked {
    fn default() -> Chunked {
        Chunked::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_reads_what_direct_reads_and_refuses_unmapped_memory() {
        let v: [u64; 2] = [0x1122_3344_5566_7788, 0x99];
        let a = v.as_ptr() as usize;
        assert_eq!(Checked.word(a), Direct.word(a));
        assert_eq!(Checked.u32(a + 4), Some(0x1122_3344));
        assert_eq!(Checked.u8(a + 8), Some(0x99));
        assert_eq!(Checked.word(8), None);
        assert_eq!(Checked.word(0x10), None);
        // The last page of the lower half is never mapped for user code.
        assert_eq!(Checked.word(0x7fff_ffff_f000 - 8 + 0x1000), None);
    }

    #[test]
    fn chunked_reads_what_checked_reads_across_chunk_ends_and_refuses_unmapped_memory() {
        let v: Vec<u64> = (0..64u64)
            .map(|i| i.wrapping_mul(0x0101_0101_0101_0101))
            .collect();
        let a = v.as_ptr() as usize;
        let m = Chunked::new();
        // Every byte offset, so that some words straddle two chunks.
        for at in (a..a + 60 * 8).step_by(3) {
            assert_eq!(m.word(at), Checked.word(at), "{at:#x}");
            assert_eq!(m.u32(at), Checked.u32(at), "{at:#x}");
        }
        assert_eq!(m.word(8), None);
        assert_eq!(m.word(0x7fff_ffff_f000 - 8 + 0x1000), None);
    }

    #[test]
    fn chunked_keeps_what_it_read_for_the_walk() {
        let mut v = vec![7u64; 32];
        let a = v.as_ptr() as usize;
        let m = Chunked::new();
        assert_eq!(m.word(a), Some(7));
        v[0] = 9;
        assert_eq!(m.word(a), Some(7), "the chunk read first is kept");
        assert_eq!(Chunked::new().word(v.as_ptr() as usize), Some(9));
    }
}
