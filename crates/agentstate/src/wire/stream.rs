//! The wire form written straight from the event, with no JSON tree in between: a serde
//! `Serializer` adapter that renames model field names to camelCase as they pass, leaves
//! free-form maps as they are, drops ADK's internal metadata and adds the reference's default
//! fields. It writes what `to_value` followed by the tree conversion would, a few times faster
//! (the conversion allocated every key and every node twice).

use std::borrow::Cow;

use serde::ser::{
    self, Serialize, SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant, SerializeTuple,
    SerializeTupleStruct, SerializeTupleVariant, Serializer,
};

use super::engine::Raw;
use super::{FREE_FORM, INTERNAL_METADATA_PREFIX, Kind, MAP_OF_MODELS, camel, known, snake};
use crate::{Event, Value};

/// Where in an event a value sits, which decides what happens to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// The event itself: a model, plus `node_info` by default and internal metadata dropped.
    Event,
    /// Its `actions`: a model, plus the reference's two empty maps by default.
    Actions,
    /// A model: field names renamed, values by their field.
    Model,
    /// A map from user keys to models: keys kept, values models.
    MapOfModels,
    /// User data: written as it is.
    FreeForm,
}

/// What a field name (as stored) means in a map of some mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Field<'k> {
    /// The name as written.
    pub(super) written: Cow<'k, str>,
    /// The mode of its value.
    pub(super) child: Mode,
    /// Which of the mode's [`defaults`](Mode::defaults) it is.
    pub(super) default: Option<usize>,
}

impl Mode {
    /// What field `stored` is in a map of this mode: ADK's own names by one lookup, any other
    /// by the general rules ([`field_by_rules`](Self::field_by_rules)), with the same answer.
    pub(super) fn field(self, stored: &str) -> Field<'_> {
        let Some((written, kind)) = known(stored).filter(|_| matches!(self, Self::Event | Self::Actions | Self::Model))
        else {
            return self.field_by_rules(stored);
        };
        let child = match kind {
            Kind::FreeForm => Self::FreeForm,
            Kind::MapOfModels => Self::MapOfModels,
            Kind::Model if self == Self::Event && stored == "actions" => Self::Actions,
            Kind::Model => Self::Model,
        };
        let default = self.defaults().iter().position(|(name, _, _)| *name == stored);
        Field { written: Cow::Borrowed(written), child, default }
    }

    /// [`field`](Self::field) by the rules alone: the name in snake_case decides its value's
    /// mode and which default it is (stored text may have it camelCased already).
    pub(super) fn field_by_rules(self, stored: &str) -> Field<'_> {
        let snake = snake(stored);
        let child = match self {
            Self::FreeForm => Self::FreeForm,
            Self::MapOfModels => Self::Model,
            _ if FREE_FORM.contains(&&*snake) => Self::FreeForm,
            _ if MAP_OF_MODELS.contains(&&*snake) => Self::MapOfModels,
            Self::Event if stored == "actions" => Self::Actions,
            _ => Self::Model,
        };
        let default = self.defaults().iter().position(|(name, _, _)| *name == snake);
        Field { written: self.written(stored), child, default }
    }

    /// `stored`, a field name in a map of this mode, as written: renamed in models, as it is
    /// elsewhere.
    pub(super) fn written(self, stored: &str) -> Cow<'_, str> {
        match self {
            Self::MapOfModels | Self::FreeForm => Cow::Borrowed(stored),
            _ => camel(stored),
        }
    }

    /// The mode of the elements of an array in this mode (`MapOfModels` leaves non-maps alone).
    pub(super) fn element(self) -> Self {
        match self {
            Self::MapOfModels | Self::FreeForm => Self::FreeForm,
            _ => Self::Model,
        }
    }

    /// The defaults a map in this mode gets when it lacks them: the reference's, and the fields
    /// an `Event` always has (which only stored text can lack: see `stored`).
    pub(super) fn defaults(self) -> &'static [DefaultField] {
        match self {
            Self::Event => &[
                ("node_info", "nodeInfo", DefaultValue::NodeInfo),
                ("author", "author", DefaultValue::EmptyText),
                ("actions", "actions", DefaultValue::Actions),
            ],
            Self::Actions => &[
                ("requested_auth_configs", "requestedAuthConfigs", DefaultValue::EmptyMap),
                ("requested_tool_confirmations", "requestedToolConfirmations", DefaultValue::EmptyMap),
                ("state_delta", "stateDelta", DefaultValue::EmptyMap),
                ("artifact_delta", "artifactDelta", DefaultValue::EmptyMap),
            ],
            _ => &[],
        }
    }
}

/// The value of a field a map gets when it lacks it: written without building it.
#[derive(Debug, Clone, Copy)]
pub(super) enum DefaultValue {
    /// `""`.
    EmptyText,
    /// `{}`.
    EmptyMap,
    /// The reference's `node_info`: `{"path": ""}`.
    NodeInfo,
    /// An event's `actions`, with its own defaults.
    Actions,
}

impl DefaultValue {
    /// As JSON text.
    pub(super) fn text(self) -> &'static str {
        match self {
            Self::EmptyText => r#""""#,
            Self::EmptyMap => "{}",
            Self::NodeInfo => r#"{"path":""}"#,
            Self::Actions => {
                r#"{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}}"#
            }
        }
    }
}

impl Serialize for DefaultValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::EmptyText => serializer.serialize_str(""),
            Self::EmptyMap => serializer.serialize_map(Some(0))?.end(),
            Self::NodeInfo => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("path", "")?;
                map.end()
            }
            Self::Actions => {
                // In the order of `text`.
                let mut map = serializer.serialize_map(Some(4))?;
                for key in ["stateDelta", "artifactDelta", "requestedAuthConfigs", "requestedToolConfirmations"] {
                    map.serialize_entry(key, &Self::EmptyMap)?;
                }
                map.end()
            }
        }
    }
}

/// A field a map gets when it lacks it: its key as stored, as written, and its value.
pub(super) type DefaultField = (&'static str, &'static str, DefaultValue);

/// `value` written in `mode`.
pub(super) struct Wire<'a, T: ?Sized>(pub(super) &'a T, pub(super) Mode);

impl<T: Serialize + ?Sized> Serialize for Wire<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            Mode::FreeForm => self.0.serialize(serializer),
            mode => self.0.serialize(Adapter { inner: serializer, mode, raw: None }),
        }
    }
}

/// An event as the API shows it, written without building a JSON tree: see [`super::event_to_wire`].
#[derive(Debug, Clone, Copy)]
pub struct WireEvent<'a>(pub &'a Event);

impl Serialize for WireEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire(self.0, Mode::Event).serialize(serializer)
    }
}

/// An event in camelCase exactly as stored (see [`super::event_to_camel`]): renamed, nothing
/// added or dropped.
pub(super) struct CamelEvent<'a>(pub(super) &'a Event);

impl Serialize for CamelEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire(self.0, Mode::Model).serialize(serializer)
    }
}

/// `value` (an event) written as `rawEvent` shows it: in camelCase as stored, with `raw`'s edits.
pub(super) fn write_raw<T: Serialize + ?Sized, S: Serializer>(
    value: &T,
    raw: &Raw<'_>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    value.serialize(Adapter { inner: serializer, mode: Mode::Model, raw: Some(raw) })
}

struct Adapter<'r, S> {
    inner: S,
    mode: Mode,
    /// The edits of `rawEvent`, for the event's own map (never nested ones).
    raw: Option<&'r Raw<'r>>,
}

/// A map (or struct) being written: renames keys, tracks the defaults it has seen.
struct MapAdapter<'r, M> {
    inner: M,
    mode: Mode,
    raw: Option<&'r Raw<'r>>,
    /// The key (as stored) waiting for its value, between serialize_key and serialize_value.
    key: Option<String>,
    /// Which of the mode's defaults appeared.
    seen: [bool; 4],
}

impl<'r, M: SerializeMap> MapAdapter<'r, M> {
    fn new(inner: M, mode: Mode, raw: Option<&'r Raw<'r>>) -> Self {
        Self { inner, mode, raw, key: None, seen: [false; 4] }
    }

    fn entry<T: Serialize + ?Sized>(&mut self, stored: &str, value: &T) -> Result<(), M::Error> {
        let Field { written, child, default } = self.mode.field(stored);
        if let Some(i) = default {
            self.seen[i] = true;
        }
        if let Some(raw) = self.raw
            && raw.write_entry(&mut self.inner, stored, &written)?
        {
            return Ok(());
        }
        if self.mode == Mode::Event && stored == "custom_metadata" {
            // Internal metadata is stored, never shown; an emptied map is left out.
            let mut meta = serde_json::to_value(value).map_err(ser::Error::custom)?;
            if let Value::Object(map) = &mut meta {
                map.retain(|k, _| !k.starts_with(INTERNAL_METADATA_PREFIX));
                if map.is_empty() {
                    return Ok(());
                }
            }
            return self.inner.serialize_entry(&*written, &meta);
        }
        self.inner.serialize_entry(&*written, &Wire(value, child))
    }

    fn finish(mut self) -> Result<M::Ok, M::Error> {
        for (i, (_, written, value)) in self.mode.defaults().iter().enumerate() {
            if !self.seen[i] {
                self.inner.serialize_entry(written, value)?;
            }
        }
        self.inner.end()
    }
}

impl<M: SerializeMap> SerializeMap for MapAdapter<'_, M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.key = Some(key.serialize(KeyText(str::to_owned)).map_err(ser::Error::custom)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        let stored = self.key.take().ok_or_else(|| ser::Error::custom("a map value without its key"))?;
        self.entry(&stored, value)
    }

    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<(), Self::Error> {
        // The key is handed over as text where it is, not copied.
        key.serialize(KeyText(|stored: &str| self.entry(stored, value))).map_err(ser::Error::custom)?
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        self.finish()
    }
}

impl<M: SerializeMap> SerializeStruct for MapAdapter<'_, M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Self::Error> {
        self.entry(key, value)
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        self.finish()
    }
}

/// A sequence (or tuple) being written: each element in the element mode.
struct SeqAdapter<Q> {
    inner: Q,
    mode: Mode,
}

macro_rules! seq_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl<Q: $trait> $trait for SeqAdapter<Q> {
            type Ok = Q::Ok;
            type Error = Q::Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
                self.inner.$method(&Wire(value, self.mode.element()))
            }

            fn end(self) -> Result<Self::Ok, Self::Error> {
                self.inner.end()
            }
        }
    )*};
}

seq_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A struct variant: its fields renamed only if their names need nothing new (the models have
/// none; kept for completeness, written as they are).
struct VariantAdapter<V> {
    inner: V,
    mode: Mode,
}

impl<V: SerializeStructVariant> SerializeStructVariant for VariantAdapter<V> {
    type Ok = V::Ok;
    type Error = V::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Self::Error> {
        self.inner.serialize_field(key, &Wire(value, self.mode.field(key).child))
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        self.inner.end()
    }
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method(self, $($arg: $ty),*) -> Result<Self::Ok, Self::Error> {
            self.inner.$method($($arg),*)
        }
    )*};
}

impl<'r, S: Serializer> Serializer for Adapter<'r, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = SeqAdapter<S::SerializeSeq>;
    type SerializeTuple = SeqAdapter<S::SerializeTuple>;
    type SerializeTupleStruct = SeqAdapter<S::SerializeTupleStruct>;
    type SerializeTupleVariant = SeqAdapter<S::SerializeTupleVariant>;
    type SerializeMap = MapAdapter<'r, S::SerializeMap>;
    type SerializeStruct = MapAdapter<'r, S::SerializeMap>;
    type SerializeStructVariant = VariantAdapter<S::SerializeStructVariant>;

    forward!(
        serialize_bool(v: bool), serialize_i8(v: i8), serialize_i16(v: i16), serialize_i32(v: i32),
        serialize_i64(v: i64), serialize_i128(v: i128), serialize_u8(v: u8), serialize_u16(v: u16),
        serialize_u32(v: u32), serialize_u64(v: u64), serialize_u128(v: u128), serialize_f32(v: f32),
        serialize_f64(v: f64), serialize_char(v: char), serialize_str(v: &str), serialize_bytes(v: &[u8]),
        serialize_none(), serialize_unit(), serialize_unit_struct(name: &'static str),
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Self::Ok, Self::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error> {
        self.inner.serialize_newtype_variant(name, index, variant, &Wire(value, self.mode))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Ok(SeqAdapter { inner: self.inner.serialize_seq(len)?, mode: self.mode })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Ok(SeqAdapter { inner: self.inner.serialize_tuple(len)?, mode: self.mode })
    }

    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Ok(SeqAdapter { inner: self.inner.serialize_tuple_struct(name, len)?, mode: self.mode })
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Ok(SeqAdapter { inner: self.inner.serialize_tuple_variant(name, index, variant, len)?, mode: self.mode })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Ok(MapAdapter::new(self.inner.serialize_map(len)?, self.mode, self.raw))
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Self::SerializeStruct, Self::Error> {
        // A struct is written as a map, so renamed field names need not be `'static`.
        Ok(MapAdapter::new(self.inner.serialize_map(Some(len))?, self.mode, self.raw))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Ok(VariantAdapter { inner: self.inner.serialize_struct_variant(name, index, variant, len)?, mode: self.mode })
    }
}

/// Reads a map key as text (JSON keys are strings; numbers and booleans as their text) and
/// hands it to the function it holds.
struct KeyText<F>(F);

#[derive(Debug)]
struct NotText;

impl std::fmt::Display for NotText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a map key that is not text")
    }
}

impl std::error::Error for NotText {}

impl ser::Error for NotText {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        Self
    }
}

macro_rules! key_as_text {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method(self, v: $ty) -> Result<R, NotText> {
            Ok((self.0)(&v.to_string()))
        }
    )*};
}

impl<R, F: FnOnce(&str) -> R> Serializer for KeyText<F> {
    type Ok = R;
    type Error = NotText;
    type SerializeSeq = ser::Impossible<R, NotText>;
    type SerializeTuple = ser::Impossible<R, NotText>;
    type SerializeTupleStruct = ser::Impossible<R, NotText>;
    type SerializeTupleVariant = ser::Impossible<R, NotText>;
    type SerializeMap = ser::Impossible<R, NotText>;
    type SerializeStruct = ser::Impossible<R, NotText>;
    type SerializeStructVariant = ser::Impossible<R, NotText>;

    fn serialize_str(self, v: &str) -> Result<R, NotText> {
        Ok((self.0)(v))
    }

    key_as_text!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char)
    );

    fn serialize_f32(self, _v: f32) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_f64(self, _v: f64) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_none(self) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _v: &T) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_unit(self) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_unit_variant(self, _n: &'static str, _i: u32, variant: &'static str) -> Result<R, NotText> {
        Ok((self.0)(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _n: &'static str, v: &T) -> Result<R, NotText> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _n: &'static str,
        _i: u32,
        _variant: &'static str,
        _v: &T,
    ) -> Result<R, NotText> {
        Err(NotText)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, NotText> {
        Err(NotText)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, NotText> {
        Err(NotText)
    }
    fn serialize_tuple_struct(self, _n: &'static str, _len: usize) -> Result<Self::SerializeTupleStruct, NotText> {
        Err(NotText)
    }
    fn serialize_tuple_variant(
        self,
        _n: &'static str,
        _i: u32,
        _v: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, NotText> {
        Err(NotText)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, NotText> {
        Err(NotText)
    }
    fn serialize_struct(self, _n: &'static str, _len: usize) -> Result<Self::SerializeStruct, NotText> {
        Err(NotText)
    }
    fn serialize_struct_variant(
        self,
        _n: &'static str,
        _i: u32,
        _v: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, NotText> {
        Err(NotText)
    }
}
