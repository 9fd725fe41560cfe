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
        crate::sys::own_memory::read_own_memory(crate::record::guard::tid(), addr, buf)
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
/// whenever a word in it is. A missed chunk comes with the [`BELOW`] chunks under it in its page, in
/// the same system call: a frame's callers lie below it on the interpreter's data stack, so a
/// 13-frame chain takes one read instead of three. Lives for one walk: what it holds is as old as that walk.
pub struct Chunked {
    slots: std::cell::RefCell<Slots>,
}

struct Slots {
    /// Each slot's chunk address; address 0 is never read (see `chunk`), so it marks an empty slot.
    bases: [usize; CHUNKS],
    bytes: [[u8; CHUNK]; CHUNKS],
    next: usize,
}

const CHUNK: usize = 512;
const CHUNKS: usize = 8;
/// Chunks read under a missed one, in its page.
const BELOW: usize = 2;
/// The smallest page: a span inside one is read whole or not at all.
const PAGE: usize = 4096;

impl Chunked {
    pub fn new() -> Chunked {
        Chunked {
            slots: std::cell::RefCell::new(Slots {
                bases: [0; CHUNKS],
                bytes: [[0; CHUNK]; CHUNKS],
                next: 0,
            }),
        }
    }

    /// The `len` bytes at offset `at` of the chunk at `base` (`at + len <= CHUNK`), into `out`.
    fn chunk(&self, base: usize, at: usize, out: &mut [u8]) -> bool {
        if base == 0 {
            return false;
        }
        let mut s = self.slots.borrow_mut();
        let Slots { bases, bytes, next } = &mut *s;
        if let Some(i) = bases.iter().position(|&b| b == base) {
            out.copy_from_slice(&bytes[i][at..at + out.len()]);
            return true;
        }
        // The chunk and those under it in its page that are not here yet, read as one span straight
        // into neighbouring slots: inside one page, the span is readable exactly when the chunk is.
        let page = base & !(PAGE - 1);
        let mut n = 1;
        while n <= BELOW {
            let below = base.saturating_sub(n * CHUNK);
            if below < page || below == 0 || bases.contains(&below) {
                break;
            }
            n += 1;
        }
        let lo = base - (n - 1) * CHUNK;
        let i = if *next + n > CHUNKS { 0 } else { *next };
        let span = bytes[i..i + n].as_flattened_mut();
        if !Checked.read_into(lo, span) {
            bases[i..i + n].fill(0);
            return false;
        }
        for k in 0..n {
            bases[i + k] = lo + k * CHUNK;
        }
        *next = (i + n) % CHUNKS;
        let i = i + n - 1;
        out.copy_from_slice(&bytes[i][at..at + out.len()]);
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

/// The first [`HEAD`] bytes of each of several objects (the code objects on a lent walk's chain),
/// read in one system call where [`Chunked`] would make about one a code object; a read of any
/// other address, or of an object whose head could not be read, goes to the chunks. Lives for one
/// walk, like the chunks.
pub struct Heads<'a> {
    chunks: &'a Chunked,
    addrs: [usize; MAX_HEADS],
    bytes: [[u8; HEAD]; MAX_HEADS],
    /// Which heads were read (one bit each).
    read: u32,
    len: usize,
    /// The head the last read was in: a frame's reads of its code object come together.
    last: std::cell::Cell<usize>,
}

/// Bytes read of each object: every field of a code object that a lent walk reads (its type, first
/// line, file, name and line table) lies in its first 144 bytes, in every supported version.
pub const HEAD: usize = 144;
/// Most objects read at once; more go to the chunks.
pub const MAX_HEADS: usize = crate::sys::own_memory::MANY_READS;

impl<'a> Heads<'a> {
    /// Reads the heads of `objects` (each address once, at most [`MAX_HEADS`]).
    pub fn read(chunks: &'a Chunked, objects: impl IntoIterator<Item = usize>) -> Heads<'a> {
        let mut h = Heads {
            chunks,
            addrs: [0; MAX_HEADS],
            bytes: [[0; HEAD]; MAX_HEADS],
            read: 0,
            len: 0,
            last: std::cell::Cell::new(0),
        };
        for a in objects {
            if h.len == MAX_HEADS {
                break;
            }
            if a != 0 && !h.addrs[..h.len].contains(&a) {
                h.addrs[h.len] = a;
                h.len += 1;
            }
        }
        // The kernel stops at the first head it cannot read (a frame pointing at something freed):
        // the next call starts past it.
        let task = crate::record::guard::tid();
        let mut from = 0;
        while from < h.len {
            let got = crate::sys::own_memory::read_own_memory_many(
                task,
                &h.addrs[from..h.len],
                &mut h.bytes[from..h.len],
            );
            h.read |= (((1u64 << got) - 1) as u32) << from;
            from += got + 1;
        }
        h
    }

    fn head(&self, i: usize, addr: usize) -> Option<[u8; 8]> {
        if self.read & (1 << i) == 0 {
            return None;
        }
        // An address near the top of the address space (garbage read from a frame being changed)
        // must not wrap into the head.
        let at = addr
            .checked_sub(self.addrs[i])
            .filter(|&at| at <= HEAD - 8)?;
        self.last.set(i);
        let mut out = [0u8; 8];
        out.copy_from_slice(&self.bytes[i][at..at + 8]);
        Some(out)
    }
}

impl Memory for Heads<'_> {
    fn read8(&self, addr: usize) -> Option<[u8; 8]> {
        if let Some(b) = self.head(self.last.get(), addr) {
            return Some(b);
        }
        (0..self.len)
            .find_map(|i| self.head(i, addr))
            .or_else(|| self.chunks.read8(addr))
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
    fn heads_read_what_checked_reads_and_the_chunks_serve_the_rest() {
        let v: Vec<u64> = (0..200u64).map(|i| i * 3 + 1).collect();
        let a = v.as_ptr() as usize;
        let chunks = Chunked::new();
        // An unmapped address among the objects: the heads after it are read all the same.
        let objects = [a, 0x7fff_ffff_f000 - 8 + 0x1000, a + 400, a, a + 800];
        let h = Heads::read(&chunks, objects);
        assert_eq!(h.len, 4, "each address once");
        assert_eq!(h.read, 0b1101);
        for at in (a..a + 190 * 8).step_by(5) {
            assert_eq!(h.word(at), Checked.word(at), "{at:#x}");
        }
        assert_eq!(h.word(0x7fff_ffff_f000 - 8 + 0x1000), None);
        assert_eq!(h.word(8), None);
        assert_eq!(h.word(usize::MAX - 3), None, "no wrap into a head");
    }

    #[test]
    fn heads_past_the_most_go_to_the_chunks() {
        let v: Vec<u64> = (0..(MAX_HEADS as u64 + 8) * 32).collect();
        let a = v.as_ptr() as usize;
        let chunks = Chunked::new();
        let h = Heads::read(&chunks, (0..MAX_HEADS + 8).map(|i| a + i * 256));
        assert_eq!(h.len, MAX_HEADS);
        assert_eq!(h.read, u32::MAX);
        let far = a + (MAX_HEADS + 4) * 256 + 16;
        assert_eq!(h.word(far), Checked.word(far));
    }

    #[test]
    fn a_missed_chunk_brings_the_chunks_below_it_in_its_page() {
        let mut v = vec![5u64; 2048];
        let start = v.as_ptr() as usize;
        let at = |a: usize| (a - start) / 8;
        // A chunk with two chunks under it in its page, and a chunk at a page's start.
        let top = (start + 2 * CHUNK..)
            .step_by(8)
            .find(|a| a % CHUNK == 0 && a % PAGE >= BELOW * CHUNK)
            .expect("in 16 KiB");
        let page_start = (top + 2 * CHUNK..)
            .step_by(8)
            .find(|a| a % PAGE == 0)
            .expect("in 16 KiB");
        let m = Chunked::new();
        assert_eq!(m.word(top), Some(5));
        assert_eq!(m.word(page_start), Some(5));
        v[at(top - BELOW * CHUNK)] = 6;
        v[at(top + CHUNK)] = 6;
        v[at(page_start - CHUNK)] = 6;
        assert_eq!(
            m.word(top - BELOW * CHUNK),
            Some(5),
            "read with the chunk above it"
        );
        assert_eq!(
            m.word(top + CHUNK),
            Some(6),
            "the chunk above is read when asked for"
        );
        assert_eq!(
            m.word(page_start - CHUNK),
            Some(6),
            "another page is not read ahead"
        );
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
