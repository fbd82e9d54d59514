//! Anything serde can write, written as protobuf's `google.protobuf.Value` (or a `Struct`) at
//! once, in wire format: the free-form fields of a reply (`rawEvent`, a state, metadata) without
//! a JSON tree or a `Struct`'s map between.
//!
//! It means what the API's JSON means read back as a `Value`: a number is a double (an integer
//! beyond 2^53 the nearest one, as any `Struct` must carry it), `null` and a missing option are
//! `NULL_VALUE`, bytes a list of numbers (as `serde_json` writes them), an enum's variant its
//! name (with its data under that name). A map's keys must be strings (every map of an event's
//! is keyed by strings).

use pbjson_types::Struct;
use prost::Message;
use serde::Serialize;
use serde::ser;

use super::protowire::{boolean_always, bytes, close, double_always, nested, open, varint_always};

/// `google.protobuf.Value`'s fields (its `kind`).
const NULL: u32 = 1;
const NUMBER: u32 = 2;
const STRING: u32 = 3;
const BOOL: u32 = 4;
const STRUCT: u32 = 5;
const LIST: u32 = 6;
/// `Struct.fields` (a map: entries of a key and a value) and `ListValue.values`.
const ENTRY: u32 = 1;
const ENTRY_KEY: u32 = 1;
const ENTRY_VALUE: u32 = 2;
const ELEMENT: u32 = 1;

/// Why a value is not a `Value`: a map key that is not a string, or a type's own error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Error(String);

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Self(message.to_string())
    }
}

fn not_a_map() -> Error {
    Error("a struct must be a map".into())
}

/// `value`, a map, as the `Struct` field `field` of the message being written to `out`.
pub(super) fn write_struct(out: &mut Vec<u8>, field: u32, value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
    nested(out, field, |out| value.serialize(Writer { out, body: true }))
}

/// `value`, a map, as a `Struct`.
pub(super) fn to_struct(value: &(impl Serialize + ?Sized)) -> Result<Struct, Error> {
    let mut out = Vec::new();
    value.serialize(Writer { out: &mut out, body: true })?;
    Struct::decode(out.as_slice()).map_err(|e| Error(e.to_string()))
}

/// Writes one value: a `Value`'s content, or with `body` a `Struct`'s (the value must be a
/// map, or an enum's variant with data, which is written as one).
struct Writer<'o> {
    out: &'o mut Vec<u8>,
    body: bool,
}

impl Writer<'_> {
    fn scalar(self, write: impl FnOnce(&mut Vec<u8>)) -> Result<(), Error> {
        if self.body {
            return Err(not_a_map());
        }
        write(self.out);
        Ok(())
    }

    fn number(self, n: f64) -> Result<(), Error> {
        // As serde_json: a number that is not finite has no JSON, and reads back as null.
        self.scalar(|out| if n.is_finite() { double_always(out, NUMBER, n) } else { varint_always(out, NULL, 0) })
    }

    fn null(self) -> Result<(), Error> {
        self.scalar(|out| varint_always(out, NULL, 0))
    }

    fn string(self, s: &str) -> Result<(), Error> {
        self.scalar(|out| bytes(out, STRING, s.as_bytes()))
    }

    /// Opens a map: the `Struct` of a value (nothing more for a body). The openings to close.
    fn open_map(&mut self) -> Vec<usize> {
        if self.body { Vec::new() } else { vec![open(self.out, STRUCT)] }
    }

    /// Opens `{variant: …}` up to the variant's value, as serde_json writes a variant with
    /// data; the openings to close.
    fn open_variant(&mut self, variant: &str) -> Vec<usize> {
        let mut opened = self.open_map();
        opened.push(open_entry(self.out, variant.as_bytes()));
        opened.push(open(self.out, ENTRY_VALUE));
        opened
    }
}

/// Opens a `Struct`'s entry and writes its key; where the entry starts, for [`close`].
fn open_entry(out: &mut Vec<u8>, key: &[u8]) -> usize {
    let entry = open(out, ENTRY);
    bytes(out, ENTRY_KEY, key);
    entry
}

fn close_all(out: &mut Vec<u8>, opened: &[usize]) {
    for start in opened.iter().rev() {
        close(out, *start);
    }
}

fn value(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
    value.serialize(Writer { out, body: false })
}

/// A list being written (a sequence, a tuple, or a variant's tuple).
struct List<'o> {
    out: &'o mut Vec<u8>,
    opened: Vec<usize>,
}

/// A map being written (a map, a struct, or a variant's struct): each entry a key and a value.
struct Fields<'o> {
    out: &'o mut Vec<u8>,
    opened: Vec<usize>,
    /// Where the entry whose key was written and whose value is due starts.
    entry: Option<usize>,
    /// A key written as a value, to take its text from.
    key: Vec<u8>,
}

impl List<'_> {
    fn push(&mut self, element: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        nested(self.out, ELEMENT, |out| value(out, element))
    }

    fn done(self) {
        close_all(self.out, &self.opened);
    }
}

impl<'o> Fields<'o> {
    fn new(out: &'o mut Vec<u8>, opened: Vec<usize>) -> Self {
        Self { out, opened, entry: None, key: Vec::new() }
    }

    /// Opens an entry and writes its key, which must be a string.
    fn key(&mut self, key: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        self.key.clear();
        value(&mut self.key, key)?;
        // A string value is its field's key byte, its length, its text.
        let text = match self.key.split_first() {
            Some((&first, rest)) if u32::from(first) == STRING << 3 | 2 => {
                let length_bytes = rest.iter().take_while(|b| **b >= 0x80).count() + 1;
                rest.get(length_bytes..).unwrap_or_default()
            }
            _ => return Err(Error("a map key must be a string".into())),
        };
        self.entry = Some(open_entry(self.out, text));
        Ok(())
    }

    /// Writes the value of the entry whose key was written, and closes it.
    fn value(&mut self, entry_value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        let entry = self.entry.take().ok_or_else(|| Error("a map value without its key".into()))?;
        nested(self.out, ENTRY_VALUE, |out| value(out, entry_value))?;
        close(self.out, entry);
        Ok(())
    }

    fn field(&mut self, key: &str, field_value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        self.entry = Some(open_entry(self.out, key.as_bytes()));
        self.value(field_value)
    }

    fn done(self) {
        close_all(self.out, &self.opened);
    }
}

impl<'o> ser::Serializer for Writer<'o> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = List<'o>;
    type SerializeTuple = List<'o>;
    type SerializeTupleStruct = List<'o>;
    type SerializeTupleVariant = List<'o>;
    type SerializeMap = Fields<'o>;
    type SerializeStruct = Fields<'o>;
    type SerializeStructVariant = Fields<'o>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.scalar(|out| boolean_always(out, BOOL, v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.number(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.number(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.number(v.into())
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.number(v as f64)
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.number(v as f64)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.number(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.number(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.number(v.into())
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.number(v as f64)
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.number(v as f64)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.number(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        use ser::SerializeSeq;
        let mut list = self.serialize_seq(Some(v.len()))?;
        for b in v {
            list.serialize_element(b)?;
        }
        list.end()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.null()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.null()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.null()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        self.string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        inner: &T,
    ) -> Result<(), Error> {
        let opened = self.open_variant(variant);
        value(self.out, inner)?;
        close_all(self.out, &opened);
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<List<'o>, Error> {
        if self.body {
            return Err(not_a_map());
        }
        let opened = vec![open(self.out, LIST)];
        Ok(List { out: self.out, opened })
    }
    fn serialize_tuple(self, len: usize) -> Result<List<'o>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<List<'o>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<List<'o>, Error> {
        let mut opened = self.open_variant(variant);
        opened.push(open(self.out, LIST));
        Ok(List { out: self.out, opened })
    }
    fn serialize_map(mut self, _: Option<usize>) -> Result<Fields<'o>, Error> {
        let opened = self.open_map();
        Ok(Fields::new(self.out, opened))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Fields<'o>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Fields<'o>, Error> {
        let mut opened = self.open_variant(variant);
        opened.push(open(self.out, STRUCT));
        Ok(Fields::new(self.out, opened))
    }
}

/// The element-by-element traits of a list, alike but for their method's name.
macro_rules! list_of_elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for List<'_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.push(value)
            }
            fn end(self) -> Result<(), Error> {
                self.done();
                Ok(())
            }
        }
    )*};
}

list_of_elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Fields<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.value(value)
    }
    fn end(self) -> Result<(), Error> {
        self.done();
        Ok(())
    }
}

/// A struct's and a variant's fields: named entries of a map.
macro_rules! named_fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Fields<'_> {
            type Ok = ();
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
                self.field(key, value)
            }
            fn end(self) -> Result<(), Error> {
                self.done();
                Ok(())
            }
        }
    )*};
}

named_fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use pbjson_types::Value;
    use pbjson_types::value::Kind;

    /// `value` as a `Value`, read back from its bytes.
    fn to_value(value: &(impl Serialize + ?Sized)) -> Result<Value, Error> {
        let mut out = Vec::new();
        super::value(&mut out, value)?;
        Ok(Value::decode(out.as_slice()).unwrap())
    }

    fn shown(value: &Value) -> serde_json::Value {
        match &value.kind {
            Some(Kind::NullValue(_)) => serde_json::Value::Null,
            Some(Kind::NumberValue(n)) => json!(n),
            Some(Kind::StringValue(s)) => json!(s),
            Some(Kind::BoolValue(b)) => json!(b),
            Some(Kind::StructValue(s)) => {
                let mut keys: Vec<_> = s.fields.keys().collect();
                keys.sort();
                serde_json::Value::Object(keys.into_iter().map(|k| (k.clone(), shown(&s.fields[k]))).collect())
            }
            Some(Kind::ListValue(l)) => l.values.iter().map(shown).collect(),
            None => json!("no kind"),
        }
    }

    #[test]
    fn values_are_what_their_json_reads_back_as() {
        let sent = json!({"n": null, "big": 9_007_199_254_740_993_u64, "neg": -3, "f": 0.5,
                          "list": [true, "s", {"deep": null}], "empty": {}});
        let value = to_value(&sent).unwrap();
        let expected = json!({"big": 9_007_199_254_740_992.0, "empty": {}, "f": 0.5,
                              "list": [true, "s", {"deep": null}], "n": null, "neg": -3.0});
        assert_eq!(shown(&value), expected);
        assert_eq!(to_struct(&sent).unwrap().fields.len(), 6);
    }

    #[test]
    fn rust_types_are_written_as_serde_json_writes_them() {
        #[derive(Serialize)]
        enum E {
            Unit,
            New(u8),
            Tuple(u8, u8),
            Fields { a: Option<u8> },
        }
        let written = to_value(&(E::Unit, E::New(1), E::Tuple(1, 2), E::Fields { a: None }, f64::NAN, 'c')).unwrap();
        assert_eq!(
            shown(&written),
            json!(["Unit", {"New": 1.0}, {"Tuple": [1.0, 2.0]}, {"Fields": {"a": null}}, null, "c"])
        );
        assert_eq!(shown(&to_value(&serde_bytes_like(&[1, 2])).unwrap()), json!([1.0, 2.0]));
    }

    fn serde_bytes_like(bytes: &[u8]) -> impl Serialize + '_ {
        struct Bytes<'a>(&'a [u8]);
        impl Serialize for Bytes<'_> {
            fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(self.0)
            }
        }
        Bytes(bytes)
    }

    #[test]
    fn a_struct_must_be_a_map_keyed_by_strings() {
        assert!(to_struct(&json!([1])).is_err());
        let keyed_by_numbers: std::collections::BTreeMap<u8, u8> = [(1, 2)].into();
        assert!(to_struct(&keyed_by_numbers).unwrap_err().to_string().contains("key"));
    }
}
