//! Decodes CPython 3.11+'s location table (`co_linetable`), so a line can be found without calling
//! into the interpreter (for frames of another thread, which may change while they are read).
//!
//! The format (CPython's `Objects/locations.md`): entries of one start byte `1 cccc lll` (code `c`,
//! `l + 1` code units) and a payload: code 15 no location; 14 a signed varint line delta and three
//! varints (end line, columns); 13 a signed varint line delta; 10-12 a line delta of `c - 10` and two
//! column bytes; 0-9 a line delta of 0 and one column byte. Varints are 6-bit groups, bit 6 meaning
//! "more"; signed ones keep the sign in the lowest bit.

/// The line of the instruction `unit` (in 2-byte code units) of a code object whose definition
/// starts at `first_line`; `None` when the table has no line for it or ends before it.
pub fn line_at(table: &[u8], first_line: i32, unit: usize) -> Option<i32> {
    let mut bytes = table.iter().copied();
    let mut line = first_line;
    let mut addr = 0usize;
    while let Some(start) = bytes.next() {
        if start & 0x80 == 0 {
            return None;
        }
        let code = (start >> 3) & 15;
        let len = usize::from(start & 7) + 1;
        let (delta, has_line) = match code {
            15 => (0, false),
            14 => {
                let d = signed_varint(&mut bytes)?;
                for _ in 0..3 {
                    varint(&mut bytes)?;
                }
                (d, true)
            }
            13 => (signed_varint(&mut bytes)?, true),
            10..=12 => {
                bytes.next()?;
                bytes.next()?;
                (i32::from(code) - 10, true)
            }
            _ => {
                bytes.next()?;
                (0, true)
            }
        };
        line = line.wrapping_add(delta);
        if unit < addr + len {
            return has_line.then_some(line);
        }
        addr += len;
    }
    None
}

fn varint(bytes: &mut impl Iterator<Item = u8>) -> Option<u32> {
    let mut b = bytes.next()?;
    let mut value = u32::from(b & 63);
    let mut shift = 0;
    while b & 64 != 0 {
        b = bytes.next()?;
        shift += 6;
        if shift >= 32 {
            return None;
        }
        value |= u32::from(b & 63) << shift;
    }
    Some(value)
}

fn signed_varint(bytes: &mut impl Iterator<Item = u8>) -> Option<i32> {
    let v = varint(bytes)?;
    let magnitude = (v >> 1) as i32;
    Some(if v & 1 == 1 { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: u8, units: u8) -> u8 {
        0x80 | (code << 3) | (units - 1)
    }

    #[test]
    fn every_entry_form_moves_the_line_as_cpython_does() {
        let table = [
            entry(13, 1), // RESUME: first line + 0 (signed varint 0)
            0,
            entry(11, 2), // +1, two column bytes
            4,
            9,
            entry(0, 3), // short form: same line, one column byte
            5,
            entry(14, 1), // long form: +3 (svarint 6), end +0, columns 1 and 2
            6,
            0,
            1,
            2,
            entry(15, 1), // no location
            entry(13, 2), // -2 (svarint 5)
            5,
            entry(13, 1), // +100 (svarint 200 = 8 + 64*3: two groups)
            0x48,
            3,
        ];
        let lines: Vec<Option<i32>> = (0..11).map(|u| line_at(&table, 10, u)).collect();
        assert_eq!(
            lines,
            vec![
                Some(10),
                Some(11),
                Some(11),
                Some(11),
                Some(11),
                Some(11),
                Some(14),
                None,
                Some(12),
                Some(12),
                Some(112)
            ]
        );
        assert_eq!(line_at(&table, 10, 11), None, "past the end");
    }

    #[test]
    fn damaged_tables_give_none_not_a_panic() {
        assert_eq!(line_at(&[], 1, 0), None);
        assert_eq!(line_at(&[0x01], 1, 0), None);
        assert_eq!(line_at(&[entry(14, 1), 0xFF], 1, 0), None);
        assert_eq!(
            line_at(
                &[entry(14, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40],
                1,
                0
            ),
            None
        );
    }
}
