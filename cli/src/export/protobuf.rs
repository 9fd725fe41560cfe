//! The protocol-buffer wire format, writing side only and only what `profile.proto` needs: varint
//! and length-delimited fields. A message is built into its own buffer, then put into its parent
//! as bytes, so lengths are always known before they are written.

/// One message being built.
#[derive(Default)]
pub struct Message {
    buf: Vec<u8>,
}

const VARINT: u64 = 0;
const LEN: u64 = 2;

impl Message {
    /// An unsigned or non-negative integer field; zero is the default and is left out, as proto3
    /// writers do.
    pub fn uint(&mut self, field: u32, v: u64) -> &mut Self {
        if v != 0 {
            self.key(field, VARINT);
            varint(&mut self.buf, v);
        }
        self
    }

    /// An `int64` field: negative values take ten bytes, as the format says.
    pub fn int(&mut self, field: u32, v: i64) -> &mut Self {
        self.uint(field, v as u64)
    }

    /// A packed `repeated uint64`/`int64` field.
    pub fn packed(&mut self, field: u32, values: impl IntoIterator<Item = u64>) -> &mut Self {
        let mut body = Vec::new();
        for v in values {
            varint(&mut body, v);
        }
        if !body.is_empty() {
            self.bytes(field, &body);
        }
        self
    }

    /// A string or bytes field (written even when empty: a repeated string's empty entry counts).
    pub fn bytes(&mut self, field: u32, b: &[u8]) -> &mut Self {
        self.key(field, LEN);
        varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }

    /// A nested message field.
    pub fn message(&mut self, field: u32, m: &Message) -> &mut Self {
        self.bytes(field, &m.buf)
    }

    /// The encoded bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn key(&mut self, field: u32, wire: u64) {
        varint(&mut self.buf, (u64::from(field) << 3) | wire);
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_the_protobuf_documentation_shows() {
        // The documentation's examples: field 1 = 150 is 08 96 01; field 2 = "testing" is
        // 12 07 74 65 73 74 69 6e 67.
        let mut m = Message::default();
        m.uint(1, 150).bytes(2, b"testing");
        assert_eq!(
            m.into_bytes(),
            [0x08, 0x96, 0x01, 0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']
        );
    }

    #[test]
    fn zero_is_left_out_negatives_take_ten_bytes_and_packing_nests() {
        let mut m = Message::default();
        m.uint(3, 0).int(4, 0);
        assert!(m.into_bytes().is_empty());
        let mut m = Message::default();
        m.int(1, -1);
        assert_eq!(m.into_bytes().len(), 11);
        let mut m = Message::default();
        m.packed(4, [3, 270, 86942]);
        assert_eq!(
            m.into_bytes(),
            [0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05]
        );
    }
}
