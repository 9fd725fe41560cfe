//! Code objects to trace ids, and the lines frames are on: two fixed, lock-free tables in static
//! memory, so the hot path looks up a code object or a line in a few loads.
//!
//! A code object is named once per trace: the first thread to meet it reads its qualified name,
//! file and first line and sends them to the writer, which keeps the strings in a string table.
//! A slot remembers a fingerprint of the code object's name and file pointers and first line, so a
//! code object freed and replaced by another at the same address gets a new id. Lines are keyed by
//! the same fingerprint with the instruction, for the same reason: an instruction address (or code
//! address and offset) of a freed code object comes back in its successor, with other lines.
//! Never: allocate except to send a new code object's names, lock, or call into the interpreter.
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::layout::{Layout, OB_TYPE, STR_LENGTH, STR_STATE};
use super::memory::Memory;
use crate::record::msg::{Msg, PyCodeMsg};

const CODE_SLOTS: usize = 1 << 16;
const LINE_SLOTS: usize = 1 << 13;
const PROBES: usize = 32;
/// Longest name kept, in characters.
const MAX_NAME: usize = 512;

static CODE_KEYS: [AtomicU64; CODE_SLOTS] = [const { AtomicU64::new(0) }; CODE_SLOTS];
static CODE_VALUES: [AtomicU64; CODE_SLOTS] = [const { AtomicU64::new(0) }; CODE_SLOTS];
static LINE_KEYS: [AtomicU64; LINE_SLOTS] = [const { AtomicU64::new(0) }; LINE_SLOTS];
static LINE_VALUES: [AtomicU64; LINE_SLOTS] = [const { AtomicU64::new(0) }; LINE_SLOTS];
/// The next code id; 0 means "unknown" (the table was full).
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

/// A code object's identity beyond its address.
pub fn fingerprint(mem: &impl Memory, l: &Layout, code: usize) -> u32 {
    let name = mem.word(code + l.code_name).unwrap_or(0) as u64;
    let file = mem.word(code + l.code_filename).unwrap_or(0) as u64;
    let first = u64::from(mem.u32(code + l.code_firstlineno).unwrap_or(0));
    (mix(name ^ mix(file ^ mix(first))) as u32) | 1
}

/// The trace id of the code object at `code` of [`fingerprint`] `fp`, naming it first if it is new
/// to this trace.
pub fn id_with(mem: &impl Memory, l: &Layout, unicode_type: usize, code: usize, fp: u32) -> u32 {
    let key = code as u64;
    let mut i = (mix(key) as usize) & (CODE_SLOTS - 1);
    for _ in 0..PROBES {
        let k = CODE_KEYS[i].load(Ordering::Acquire);
        if k == 0
            && CODE_KEYS[i]
                .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return name(mem, l, unicode_type, code, fp, i);
        }
        if CODE_KEYS[i].load(Ordering::Acquire) == key {
            let v = CODE_VALUES[i].load(Ordering::Acquire);
            if (v >> 32) as u32 == fp {
                return v as u32;
            }
            // Not named yet by the thread that claimed the slot, or a new object at a reused
            // address: either way this thread names it (a second id for one object is harmless).
            return name(mem, l, unicode_type, code, fp, i);
        }
        i = (i + 1) & (CODE_SLOTS - 1);
    }
    0
}

fn name(
    mem: &impl Memory,
    l: &Layout,
    unicode_type: usize,
    code: usize,
    fp: u32,
    slot: usize,
) -> u32 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed) & 0x3FFF_FFFF;
    let text = |off: usize| {
        let obj = mem.word(code + off).unwrap_or(0);
        read_str(mem, l, unicode_type, obj).unwrap_or_else(|| "?".into())
    };
    crate::channel::send(Msg::PyCode(Box::new(PyCodeMsg {
        id,
        name: text(l.code_name),
        file: text(l.code_filename),
        first_line: mem.u32(code + l.code_firstlineno).unwrap_or(0),
    })));
    CODE_VALUES[slot].store((u64::from(fp) << 32) | u64::from(id), Ordering::Release);
    id
}

/// The text of a compact `str` object (every name the compiler makes is one), or `None` for anything
/// else.
pub fn read_str(
    mem: &impl Memory,
    l: &Layout,
    unicode_type: usize,
    obj: usize,
) -> Option<Box<str>> {
    if obj == 0 || mem.word(obj + OB_TYPE)? != unicode_type {
        return None;
    }
    let len = (mem.word(obj + STR_LENGTH)? as isize).clamp(0, MAX_NAME as isize) as usize;
    let state = mem.u32(obj + STR_STATE)?;
    let kind = ((state >> 2) & 7) as usize;
    let compact = (state >> 5) & 1 == 1;
    let ascii = (state >> 6) & 1 == 1;
    if !compact || !matches!(kind, 1 | 2 | 4) {
        return None;
    }
    let data = obj + if ascii { l.ascii_size } else { l.compact_size };
    let mut s = String::with_capacity(len);
    for i in 0..len {
        let at = data + i * kind;
        let c = match kind {
            1 => u32::from(mem.u8(at)?),
            2 => u32::from(mem.u8(at)?) | (u32::from(mem.u8(at + 1)?) << 8),
            _ => mem.u32(at)?,
        };
        s.push(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    Some(s.into_boxed_str())
}

/// The line for `key` (the frame's instruction pointer, or code and offset) in the code object of
/// fingerprint `fp`, computing it with `compute` on a miss.
pub fn line(key: u64, fp: u32, compute: impl FnOnce() -> u32) -> u32 {
    if let Some(line) = cached_line(key, fp) {
        return line;
    }
    let line = compute();
    remember_line(key, fp, line);
    line
}

/// The line [`line`] or [`remember_line`] kept for `key` in the code object of fingerprint `fp`.
pub fn cached_line(key: u64, fp: u32) -> Option<u32> {
    let (key, i, check) = line_slot(key, fp);
    if LINE_KEYS[i].load(Ordering::Acquire) == key {
        let v = LINE_VALUES[i].load(Ordering::Acquire);
        if v & !0xFFFF_FFFF == check {
            return Some(v as u32);
        }
    }
    None
}

/// Keeps `line` for `key` in the code object of fingerprint `fp`.
pub fn remember_line(key: u64, fp: u32, line: u32) {
    let (key, i, check) = line_slot(key, fp);
    // Key and value are stored apart; a reader between the two sees a check that does not match.
    LINE_KEYS[i].store(key, Ordering::Release);
    LINE_VALUES[i].store(check | u64::from(line), Ordering::Release);
}

/// The slot's key, index and check for `key` in the code object of fingerprint `fp`.
fn line_slot(key: u64, fp: u32) -> (u64, usize, u64) {
    let key = mix(key ^ mix(u64::from(fp))) | 1 << 63;
    let i = (mix(key) as usize) & (LINE_SLOTS - 1);
    (key, i, (mix(key ^ 0x5bd1_e995) >> 32) << 32)
}

/// Forgets every code object (a fork child's new trace must name them again). Only while the
/// process has a single thread.
pub fn forget() {
    for (k, v) in CODE_KEYS.iter().zip(CODE_VALUES.iter()) {
        if k.load(Ordering::Relaxed) != 0 {
            k.store(0, Ordering::Relaxed);
            v.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::for_minor;
    use super::super::memory::Direct;
    use super::*;

    /// A fake compact str of the 3.12 layout.
    fn fake_str(unicode_type: usize, text: &str) -> Vec<u64> {
        let l = for_minor(12).unwrap();
        let ascii = text.is_ascii();
        let chars: Vec<u32> = text.chars().map(u32::from).collect();
        let kind = if ascii || chars.iter().all(|&c| c < 256) {
            1
        } else if chars.iter().all(|&c| c < 65536) {
            2
        } else {
            4
        };
        let head = if ascii { l.ascii_size } else { l.compact_size };
        let mut bytes = vec![0u8; head + chars.len() * kind + 8];
        bytes[OB_TYPE..OB_TYPE + 8].copy_from_slice(&(unicode_type as u64).to_ne_bytes());
        bytes[STR_LENGTH..STR_LENGTH + 8].copy_from_slice(&(chars.len() as u64).to_ne_bytes());
        let state: u32 = ((kind as u32) << 2) | (1 << 5) | (u32::from(ascii) << 6);
        bytes[STR_STATE..STR_STATE + 4].copy_from_slice(&state.to_ne_bytes());
        for (i, c) in chars.iter().enumerate() {
            bytes[head + i * kind..head + (i + 1) * kind].copy_from_slice(&c.to_le_bytes()[..kind]);
        }
        bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_ne_bytes(w)
            })
            .collect()
    }

    #[test]
    fn compact_strings_of_every_kind_are_read() {
        let l = for_minor(12).unwrap();
        let ut = 0xabcd;
        for text in ["train.py", "größe", "层_layer", "emoji_😀"] {
            let s = fake_str(ut, text);
            let got = read_str(&Direct, l, ut, s.as_ptr() as usize);
            assert_eq!(got.as_deref(), Some(text));
        }
        let s = fake_str(ut + 1, "x");
        assert_eq!(read_str(&Direct, l, ut, s.as_ptr() as usize), None);
        assert_eq!(read_str(&Direct, l, ut, 0), None);
    }

    #[test]
    fn lines_are_cached_by_key() {
        let mut calls = 0;
        assert_eq!(
            line(0x7000_1234, 5, || {
                calls += 1;
                17
            }),
            17
        );
        assert_eq!(
            line(0x7000_1234, 5, || {
                calls += 1;
                99
            }),
            17
        );
        assert_eq!(calls, 1);
        assert_eq!(line(0x7000_1236, 5, || 18), 18);
        // The same instruction address in another code object (a freed one's successor at the same
        // address) is another key.
        assert_eq!(line(0x7000_1234, 7, || 42), 42);
        assert_eq!(line(0x7000_1234, 5, || 99), 17);
    }
}
