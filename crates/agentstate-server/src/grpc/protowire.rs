//! Protobuf's wire format written by hand into a `Vec<u8>`, for the replies encoded without
//! building their messages first (`ListEvents`' page; free-form `Struct`s). A nested message's
//! length is not known before it is written: one byte is kept for it and the content moved on
//! by the few more its length takes when it is 128 bytes or longer.
//!
//! Proto3 leaves a scalar at its default value out, as prost does; a present message field is
//! written even when empty (prost writes `Some` of a message so), so the bytes decode to the
//! message prost would have encoded.

/// Wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

/// Appends `value` as a varint.
pub(super) fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        // The low seven bits, with the bit that says more follow.
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire_type: u32) {
    varint(out, u64::from(field << 3 | wire_type));
}

/// A string field, left out when empty.
pub(super) fn string(out: &mut Vec<u8>, field: u32, value: &str) {
    if !value.is_empty() {
        bytes(out, field, value.as_bytes());
    }
}

/// A length-delimited field, written even when empty (a repeated string's element, a map's key).
pub(super) fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    key(out, field, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// A bool field, left out when false.
pub(super) fn boolean(out: &mut Vec<u8>, field: u32, value: bool) {
    if value {
        key(out, field, VARINT);
        out.push(1);
    }
}

/// A bool field written even when false (a `Value`'s oneof member).
pub(super) fn boolean_always(out: &mut Vec<u8>, field: u32, value: bool) {
    key(out, field, VARINT);
    out.push(u8::from(value));
}

/// An enum or integer field written even when zero (a `Value`'s `null_value`).
pub(super) fn varint_always(out: &mut Vec<u8>, field: u32, value: u64) {
    key(out, field, VARINT);
    varint(out, value);
}

/// A double field written even when zero (a `Value`'s `number_value`).
pub(super) fn double_always(out: &mut Vec<u8>, field: u32, value: f64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&value.to_le_bytes());
}

/// Opens a message field: its key and a byte for its length. Returns where its content starts,
/// for [`close`].
pub(super) fn open(out: &mut Vec<u8>, field: u32) -> usize {
    key(out, field, LEN);
    out.push(0);
    out.len()
}

/// Closes the message field opened at `start`: writes its length.
pub(super) fn close(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    if len < 0x80 {
        out[start - 1] = len as u8;
        return;
    }
    let mut prefix = Vec::with_capacity(5);
    varint(&mut prefix, len as u64);
    out[start - 1] = prefix[0];
    out.splice(start..start, prefix[1..].iter().copied());
}

/// A message field whose content `write` appends (present, so written even when empty).
pub(super) fn nested<T>(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    let start = open(out, field);
    let written = write(out);
    close(out, start);
    written
}

/// A message field of a prost message.
pub(super) fn message(out: &mut Vec<u8>, field: u32, message: &impl prost::Message) {
    prost::encoding::message::encode(field, message, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_of_any_size_are_written_before_their_content() {
        for size in [0, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let mut out = vec![9];
            nested(&mut out, 5, |out| out.extend(std::iter::repeat_n(7_u8, size)));
            let mut expected = vec![9, 5 << 3 | 2];
            varint(&mut expected, size as u64);
            expected.extend(std::iter::repeat_n(7_u8, size));
            assert_eq!(out, expected, "{size}");
        }
    }

    #[test]
    fn fields_are_what_prost_writes() {
        #[derive(Clone, PartialEq, prost::Message)]
        struct M {
            #[prost(string, tag = "1")]
            s: String,
            #[prost(bool, tag = "2")]
            b: bool,
            #[prost(message, optional, tag = "3")]
            m: Option<pbjson_types::Timestamp>,
            #[prost(string, repeated, tag = "4")]
            r: Vec<String>,
        }
        let sent = M {
            s: "héllo".into(),
            b: true,
            m: Some(pbjson_types::Timestamp { seconds: 300, nanos: 5 }),
            r: vec![String::new(), "x".into()],
        };
        let mut out = Vec::new();
        string(&mut out, 1, &sent.s);
        boolean(&mut out, 2, sent.b);
        message(&mut out, 3, sent.m.as_ref().unwrap());
        for r in &sent.r {
            bytes(&mut out, 4, r.as_bytes());
        }
        assert_eq!(out, prost::Message::encode_to_vec(&sent));
        let mut empty = Vec::new();
        string(&mut empty, 1, "");
        boolean(&mut empty, 2, false);
        assert!(empty.is_empty());
    }
}
