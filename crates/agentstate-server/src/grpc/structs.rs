//! Anything serde can write, written as a `google.protobuf.Value` (or `Struct`) at once: the
//! free-form fields of a reply (`rawEvent`, a state, metadata) without a JSON tree between.
//!
//! It means what the API's JSON means read back as a `Value`: a number is a double (an integer
//! beyond 2^53 the nearest one, as any `Struct` must carry it), `null` and a missing option are
//! `NULL_VALUE`, bytes a list of numbers (as `serde_json` writes them), an enum's variant its
//! name (with its data under that name). A map's keys must be strings (every map of an event's
//! is keyed by strings).

use std::collections::HashMap;

use pbjson_types::value::Kind;
use pbjson_types::{ListValue, Struct, Value};
use serde::Serialize;
use serde::ser;

/// Why a value is not a `Value`: a map key that is not a string, or a type's own error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Error(String);

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Self(message.to_string())
    }
}

/// `value` as a `Value`.
pub(super) fn to_value(value: &(impl Serialize + ?Sized)) -> Result<Value, Error> {
    value.serialize(Writer).map(|kind| Value { kind: Some(kind) })
}

/// `value`, a map, as a `Struct`.
pub(super) fn to_struct(value: &(impl Serialize + ?Sized)) -> Result<Struct, Error> {
    match value.serialize(Writer)? {
        Kind::StructValue(fields) => Ok(fields),
        _ => Err(Error("a struct must be a map".into())),
    }
}

fn kind(value: &(impl Serialize + ?Sized)) -> Result<Kind, Error> {
    value.serialize(Writer)
}

/// A map's key, which must be a string.
fn map_key(key: &(impl Serialize + ?Sized)) -> Result<String, Error> {
    match kind(key)? {
        Kind::StringValue(key) => Ok(key),
        _ => Err(Error("a map key must be a string".into())),
    }
}

fn number(n: f64) -> Kind {
    // As serde_json: a number that is not finite has no JSON, and reads back as null.
    if n.is_finite() { Kind::NumberValue(n) } else { Kind::NullValue(0) }
}

/// `{variant: value}`, as serde_json writes an enum's variant with data.
fn tagged(variant: &str, value: Kind) -> Kind {
    let fields = HashMap::from([(variant.to_owned(), Value { kind: Some(value) })]);
    Kind::StructValue(Struct { fields })
}

/// The serializer: each call answers the kind of the value it was given.
struct Writer;

/// A list being written (a sequence, a tuple, or a variant's tuple).
struct List {
    values: Vec<Value>,
    variant: Option<&'static str>,
}

/// A map being written (a map, a struct, or a variant's struct).
struct Fields {
    fields: HashMap<String, Value>,
    key: Option<String>,
    variant: Option<&'static str>,
}

impl List {
    fn push(&mut self, value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        self.values.push(to_value(value)?);
        Ok(())
    }

    fn done(self) -> Kind {
        let list = Kind::ListValue(ListValue { values: self.values });
        match self.variant {
            Some(variant) => tagged(variant, list),
            None => list,
        }
    }
}

impl Fields {
    fn new(len: Option<usize>, variant: Option<&'static str>) -> Self {
        Self { fields: HashMap::with_capacity(len.unwrap_or(0)), key: None, variant }
    }

    fn insert(&mut self, key: String, value: &(impl Serialize + ?Sized)) -> Result<(), Error> {
        self.fields.insert(key, to_value(value)?);
        Ok(())
    }

    fn done(self) -> Kind {
        let fields = Kind::StructValue(Struct { fields: self.fields });
        match self.variant {
            Some(variant) => tagged(variant, fields),
            None => fields,
        }
    }
}

impl ser::Serializer for Writer {
    type Ok = Kind;
    type Error = Error;
    type SerializeSeq = List;
    type SerializeTuple = List;
    type SerializeTupleStruct = List;
    type SerializeTupleVariant = List;
    type SerializeMap = Fields;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Fields;

    fn serialize_bool(self, v: bool) -> Result<Kind, Error> {
        Ok(Kind::BoolValue(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v.into()))
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_i64(self, v: i64) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v as f64))
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_i128(self, v: i128) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v as f64))
    }
    fn serialize_u8(self, v: u8) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v.into()))
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_u64(self, v: u64) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v as f64))
    }
    #[allow(clippy::cast_precision_loss)]
    fn serialize_u128(self, v: u128) -> Result<Kind, Error> {
        Ok(Kind::NumberValue(v as f64))
    }
    fn serialize_f32(self, v: f32) -> Result<Kind, Error> {
        Ok(number(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Kind, Error> {
        Ok(number(v))
    }
    fn serialize_char(self, v: char) -> Result<Kind, Error> {
        Ok(Kind::StringValue(v.into()))
    }
    fn serialize_str(self, v: &str) -> Result<Kind, Error> {
        Ok(Kind::StringValue(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Kind, Error> {
        let values = v.iter().map(|b| Value { kind: Some(Kind::NumberValue((*b).into())) }).collect();
        Ok(Kind::ListValue(ListValue { values }))
    }
    fn serialize_none(self) -> Result<Kind, Error> {
        Ok(Kind::NullValue(0))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Kind, Error> {
        kind(value)
    }
    fn serialize_unit(self) -> Result<Kind, Error> {
        Ok(Kind::NullValue(0))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Kind, Error> {
        Ok(Kind::NullValue(0))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<Kind, Error> {
        Ok(Kind::StringValue(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<Kind, Error> {
        kind(value)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Kind, Error> {
        Ok(tagged(variant, kind(value)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<List, Error> {
        Ok(List { values: Vec::with_capacity(len.unwrap_or(0)), variant: None })
    }
    fn serialize_tuple(self, len: usize) -> Result<List, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<List, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<List, Error> {
        Ok(List { values: Vec::with_capacity(len), variant: Some(variant) })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Fields, Error> {
        Ok(Fields::new(len, None))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Fields, Error> {
        Ok(Fields::new(Some(len), None))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Fields, Error> {
        Ok(Fields::new(Some(len), Some(variant)))
    }
}

/// The element-by-element traits of a list, alike but for their method's name.
macro_rules! list_of_elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for List {
            type Ok = Kind;
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.push(value)
            }
            fn end(self) -> Result<Kind, Error> {
                Ok(self.done())
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

impl ser::SerializeMap for Fields {
    type Ok = Kind;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(map_key(key)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().ok_or_else(|| Error("a map value without its key".into()))?;
        self.insert(key, value)
    }
    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<(), Error> {
        self.insert(map_key(key)?, value)
    }
    fn end(self) -> Result<Kind, Error> {
        Ok(self.done())
    }
}

/// A struct's and a variant's fields: named entries of a map.
macro_rules! named_fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Fields {
            type Ok = Kind;
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
                self.insert(key.to_owned(), value)
            }
            fn end(self) -> Result<Kind, Error> {
                Ok(self.done())
            }
        }
    )*};
}

named_fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
