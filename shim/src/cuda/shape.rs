//! Reads the descriptor of a 2D or 3D copy (`CUDA_MEMCPY2D`, `CUDA_MEMCPY3D`): which memory each side
//! is, the first byte copied on each side, and the bytes copied, so the copy is recorded as the 1D copy
//! of its direction.
//!
//! # Safety
//! The descriptor is read field by field with unaligned reads at the offsets of the driver's
//! `cuda.h` layout, and only when the caller passes a pointer to a whole descriptor (the one the
//! program handed the driver); null reads nothing.
#![allow(unsafe_code)]

use memshim_trace::CopyApi;

/// `CUmemorytype`.
const HOST: u32 = 1;
const DEVICE: u32 = 2;
const ARRAY: u32 = 3;

/// Byte offsets of one side's fields in a descriptor.
pub struct Side {
    x: usize,
    y: usize,
    z: Option<usize>,
    memory_type: usize,
    host: usize,
    device: usize,
    pitch: usize,
    height: Option<usize>,
}

/// Byte offsets of a descriptor's fields (x86-64; the CUDA headers' layout).
pub struct Layout {
    src: Side,
    dst: Side,
    width: usize,
    rows: usize,
    depth: Option<usize>,
}

/// `CUDA_MEMCPY2D`.
pub const COPY_2D: Layout = Layout {
    src: Side {
        x: 0,
        y: 8,
        z: None,
        memory_type: 16,
        host: 24,
        device: 32,
        pitch: 48,
        height: None,
    },
    dst: Side {
        x: 56,
        y: 64,
        z: None,
        memory_type: 72,
        host: 80,
        device: 88,
        pitch: 104,
        height: None,
    },
    width: 112,
    rows: 120,
    depth: None,
};

/// `CUDA_MEMCPY3D`.
pub const COPY_3D: Layout = Layout {
    src: Side {
        x: 0,
        y: 8,
        z: Some(16),
        memory_type: 32,
        host: 40,
        device: 48,
        pitch: 72,
        height: Some(80),
    },
    dst: Side {
        x: 88,
        y: 96,
        z: Some(104),
        memory_type: 120,
        host: 128,
        device: 136,
        pitch: 160,
        height: Some(168),
    },
    width: 176,
    rows: 184,
    depth: Some(192),
};

/// What a descriptor says.
#[derive(Debug, PartialEq, Eq)]
pub struct Shape {
    src_type: u32,
    dst_type: u32,
    /// The first byte copied on each side (0 for a CUDA array).
    pub src: u64,
    pub dst: u64,
    pub size: u64,
}

impl Shape {
    /// The 1D copy call of this copy's direction.
    pub fn api(&self, is_async: bool) -> CopyApi {
        let dev = |t: u32| t == DEVICE || t == ARRAY;
        match (self.src_type, self.dst_type, is_async) {
            (HOST, d, false) if dev(d) => CopyApi::MemcpyHtoD,
            (HOST, d, true) if dev(d) => CopyApi::MemcpyHtoDAsync,
            (s, HOST, false) if dev(s) => CopyApi::MemcpyDtoH,
            (s, HOST, true) if dev(s) => CopyApi::MemcpyDtoHAsync,
            (s, d, false) if dev(s) && dev(d) => CopyApi::MemcpyDtoD,
            (s, d, true) if dev(s) && dev(d) => CopyApi::MemcpyDtoDAsync,
            (_, _, false) => CopyApi::Memcpy,
            (_, _, true) => CopyApi::MemcpyAsync,
        }
    }
}

/// Reads the descriptor at `desc` laid out as `l`; `None` for a null pointer.
///
/// # Safety
/// `desc` is null or points to a readable descriptor of that layout (the driver has just read it).
pub unsafe fn read(desc: *const u8, l: &Layout) -> Option<Shape> {
    if desc.is_null() {
        return None;
    }
    let word = |off: usize| {
        // SAFETY: every offset is inside the descriptor, per the caller's contract; unaligned
        // reads are allowed on x86-64.
        unsafe { std::ptr::read_unaligned(desc.add(off) as *const u64) }
    };
    let int = |off: usize| {
        // SAFETY: as for `word`.
        unsafe { std::ptr::read_unaligned(desc.add(off) as *const u32) }
    };
    let start = |s: &Side| -> (u32, u64) {
        let t = int(s.memory_type);
        let base = match t {
            HOST => word(s.host),
            ARRAY => return (t, 0),
            _ => word(s.device),
        };
        let pitch = word(s.pitch);
        let plane = pitch.wrapping_mul(s.height.map_or(0, word));
        let z = s.z.map_or(0, word);
        let at = base
            .wrapping_add(word(s.x))
            .wrapping_add(word(s.y).wrapping_mul(pitch))
            .wrapping_add(z.wrapping_mul(plane));
        (t, at)
    };
    let (src_type, src) = start(&l.src);
    let (dst_type, dst) = start(&l.dst);
    let size = word(l.width)
        .saturating_mul(word(l.rows).max(1))
        .saturating_mul(l.depth.map_or(1, word).max(1));
    Some(Shape {
        src_type,
        dst_type,
        src,
        dst,
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(buf: &mut [u8], off: usize, v: u64) {
        buf[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }

    #[test]
    fn a_2d_host_to_device_copy_starts_at_its_offsets() {
        let mut d = [0u8; 128];
        let (s, t) = (&COPY_2D.src, &COPY_2D.dst);
        put(&mut d, s.x, 4);
        put(&mut d, s.y, 2);
        put(&mut d, s.memory_type, u64::from(HOST));
        put(&mut d, s.host, 0x1000);
        put(&mut d, s.pitch, 256);
        put(&mut d, t.memory_type, u64::from(DEVICE));
        put(&mut d, t.device, 0x7000_0000);
        put(&mut d, COPY_2D.width, 100);
        put(&mut d, COPY_2D.rows, 8);
        // SAFETY: a whole descriptor.
        let shape = unsafe { read(d.as_ptr(), &COPY_2D) }.unwrap();
        assert_eq!(
            (shape.src, shape.dst, shape.size),
            (0x1000 + 4 + 2 * 256, 0x7000_0000, 800)
        );
        assert_eq!(shape.api(false), CopyApi::MemcpyHtoD);
        assert_eq!(shape.api(true), CopyApi::MemcpyHtoDAsync);
    }

    #[test]
    fn a_3d_copy_counts_its_depth_and_arrays_are_device_memory() {
        let mut d = [0u8; 200];
        let (s, t) = (&COPY_3D.src, &COPY_3D.dst);
        put(&mut d, s.memory_type, u64::from(ARRAY));
        put(&mut d, t.memory_type, u64::from(HOST));
        put(&mut d, t.host, 0x2000);
        put(&mut d, t.z.unwrap(), 1);
        put(&mut d, t.pitch, 64);
        put(&mut d, t.height.unwrap(), 4);
        put(&mut d, COPY_3D.width, 64);
        put(&mut d, COPY_3D.rows, 4);
        put(&mut d, COPY_3D.depth.unwrap(), 3);
        // SAFETY: a whole descriptor.
        let shape = unsafe { read(d.as_ptr(), &COPY_3D) }.unwrap();
        assert_eq!((shape.src, shape.dst, shape.size), (0, 0x2000 + 256, 768));
        assert_eq!(shape.api(false), CopyApi::MemcpyDtoH);
        // SAFETY: null is allowed.
        assert!(unsafe { read(std::ptr::null(), &COPY_3D) }.is_none());
    }

    #[test]
    fn unified_or_host_to_host_is_left_to_the_addresses() {
        let shape = Shape {
            src_type: 4,
            dst_type: DEVICE,
            src: 1,
            dst: 2,
            size: 3,
        };
        assert_eq!(shape.api(false), CopyApi::Memcpy);
        let hh = Shape {
            src_type: HOST,
            dst_type: HOST,
            src: 1,
            dst: 2,
            size: 3,
        };
        assert_eq!(hh.api(true), CopyApi::MemcpyAsync);
    }
}
