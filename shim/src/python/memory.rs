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
        crate::sys::read_own_memory(addr, buf)
    }
}

impl Memory for Checked {
    fn read8(&self, addr: usize) -> Option<[u8; 8]> {
        let mut out = [0u8; 8];
        self.read_into(addr, &mut out).then_some(out)
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
}
