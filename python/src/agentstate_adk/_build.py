"""ADK's `Session` built from the server's JSON without validating it a second time.

Validating a long session is most of a load: ADK's models (and google-genai's, whose every model
runs a Python validator over all its fields) are validated field by field, in Python, for every
event, although the server answers events that ADK itself wrote and validated. `build(Session,
data)` makes the same objects from the parsed JSON directly, as `model_construct` would but
recursively: each model class gets a plan, once, from its fields' annotations (nested models,
lists, sets, dicts, optionals, enums, base64 bytes, scalars), and an object is a copy of the
class's defaults updated with the converted values it carries.

A plan is made only where it answers what validation answers. Whatever it does not know — a
model with a validator other than the few below, a type it cannot convert, a value of another
type than the annotation (validation would coerce or refuse it), a key the model does not have —
raises `Unsure`, and the caller validates the whole answer as pydantic always has. The tests
compare the two on every kind of event ADK writes (`tests/test_build.py`).
"""

from __future__ import annotations

import base64
import binascii
import copy
import enum
import functools
import inspect
import json
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined

__all__ = ["Unsure", "build"]


class Unsure(Exception):
    """The answer holds something a plan cannot build exactly as validation would."""


#: Model validators that change nothing a plan builds: google-genai's warns when a field holds a
#: model of another class (never for JSON); ADK's `Event` routes keyword shortcuts (`message`,
#: `state`, `route`, `node_path`: refused below as unknown keys).
_HARMLESS = frozenset({"_check_field_type_mismatches", "_accept_convenience_kwargs"})

#: Keys `Event`'s validator reads although they are not fields: an event carrying one is validated.
_SHORTCUTS = frozenset({"message", "state", "route", "node_path", "nodePath"})

#: Defaults an object may share with its class; any other default is copied for each object, as
#: validation copies it (a tuple may hold a list: copied too).
_IMMUTABLE = (type(None), bool, int, float, str, bytes, enum.Enum)

Convert = Callable[[Any], Any]

_plans: dict[type, Convert] = {}
_setattr = object.__setattr__


def build(model: type[BaseModel], data: Any) -> Any:
    """`model` from `data` (parsed JSON), equal to `model.model_validate_json` of its text; `Unsure`
    where that cannot be promised."""
    return _plan(model)(data)


# -- scalars ----------------------------------------------------------------------------------


def _str(value: Any) -> Any:
    if type(value) is not str:
        raise Unsure
    return value


def _int(value: Any) -> Any:
    if type(value) is not int:
        raise Unsure
    return value


def _bool(value: Any) -> Any:
    if type(value) is not bool:
        raise Unsure
    return value


def _float(value: Any) -> Any:
    kind = type(value)
    if kind is float:
        return value
    if kind is int:
        return float(value)
    raise Unsure


def _bytes(value: Any) -> bytes:
    """Base64 as pydantic reads it in JSON (`val_json_bytes='base64'`): either alphabet."""
    if type(value) is not str:
        raise Unsure
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as e:
        raise Unsure from e


def _any(value: Any) -> Any:
    return value


_SCALARS: dict[Any, Convert] = {
    str: _str,
    int: _int,
    bool: _bool,
    float: _float,
    bytes: _bytes,
    Any: _any,
    object: _any,
}


# -- annotations ------------------------------------------------------------------------------


def _converter(annotation: Any, config: dict[str, Any]) -> Convert:
    """How a value of `annotation` is built; `Unsure` at plan time for what is not known."""
    if annotation in _SCALARS:
        if annotation is bytes and config.get("val_json_bytes") != "base64":
            raise Unsure
        return _SCALARS[annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            inner = _converter(members[0], config)
            return lambda value: None if value is None else inner(value)
        return _union(members, config)
    if origin is Literal:
        # By type too: `1 == True`, but validation does not take one for the other.
        allowed = {(type(a), a) for a in args}
        return lambda value: value if (type(value), value) in allowed else _unsure()
    if origin in (list, set) and len(args) == 1:
        item = _converter(args[0], config)
        collect = list if origin is list else set
        if item is _any:
            return lambda value: collect(value) if type(value) is list else _unsure()
        return lambda value: collect([item(v) for v in value]) if type(value) is list else _unsure()
    if origin is dict and len(args) == 2 and args[0] is str:
        item = _converter(args[1], config)
        if item is _any:
            return lambda value: value if type(value) is dict else _unsure()
        return lambda value: {k: item(v) for k, v in value.items()} if type(value) is dict else _unsure()
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _plan(annotation)
    raise Unsure


def _kinds(annotation: Any) -> frozenset[type]:
    """The JSON types a value of `annotation` may arrive as."""
    origin = typing.get_origin(annotation) or annotation
    if origin in _JSON_KINDS:
        return _JSON_KINDS[origin]
    if isinstance(origin, type) and issubclass(origin, enum.Enum):
        return frozenset({str, int})
    return frozenset({dict})


_JSON_KINDS: dict[Any, frozenset[type]] = {
    str: frozenset({str}),
    int: frozenset({int}),
    bool: frozenset({bool}),
    float: frozenset({int, float}),
    bytes: frozenset({str}),
    list: frozenset({list}),
    set: frozenset({list}),
    dict: frozenset({dict}),
}


def _union(members: list[Any], config: dict[str, Any]) -> Convert:
    """A union whose members arrive as different JSON types (`bool | int | str | list[...]`):
    the value's type picks the one member validation would pick. Members a JSON type could
    reach twice (`int | float`, two models) are left to validation."""
    by_kind: dict[type, Convert] = {}
    for member in members:
        convert = _converter(member, config)
        for kind in _kinds(member):
            if kind in by_kind:
                raise Unsure
            by_kind[kind] = convert

    def convert(value: Any) -> Any:
        if value is None:
            return None
        member = by_kind.get(type(value))
        if member is None:
            raise Unsure
        return member(value)

    return convert


def _unsure() -> Any:
    raise Unsure


def _enum(kind: type[enum.Enum]) -> Convert:
    """A member by its exact value; any other spelling (google-genai's enums take any case) is
    left to validation."""
    members = {member.value: member for member in kind}

    def convert(value: Any) -> Any:
        member = members.get(value) if type(value) in (str, int) else None
        if member is None:
            raise Unsure
        return member

    return convert


# -- models -----------------------------------------------------------------------------------


def _plan(model: type[BaseModel]) -> Convert:
    plan = _plans.get(model)
    if plan is None:
        # Made lazily, so that a model that refers to itself finds its own entry.
        _plans[model] = lambda value: _plans[model](value)
        try:
            plan = _make_plan(model)
        except Exception:  # noqa: BLE001 - whatever a model's shape holds, validating it is right
            plan = _validated(model)
        _plans[model] = plan
    return plan


def _validated(model: type[BaseModel]) -> Convert:
    """A model the plans do not know (one with its own validators, or a type they cannot
    convert): validated alone, from its JSON, as it would be inside its parent. If it is refused,
    the whole answer is validated instead, so that the error names where it is in the session."""

    def validate(value: Any) -> Any:
        try:
            return model.model_validate_json(json.dumps(value))
        except ValidationError as e:
            raise Unsure from e

    return validate


def _after_validators(model: type[BaseModel]) -> dict[str, Convert]:
    """Field validators that run on the converted value (`mode='after'`, one argument, such as
    `EventActions` making `AuthConfig`s of its dicts): run by the plan as validation runs them.
    Any other kind is left to validation."""
    found: dict[str, Convert] = {}
    for decorator in model.__pydantic_decorators__.field_validators.values():
        function = getattr(model, decorator.cls_var_name)
        if decorator.info.mode != "after" or len(inspect.signature(function).parameters) != 1:
            raise Unsure
        for name in decorator.info.fields:
            if name in found or name not in model.__pydantic_fields__:
                raise Unsure
            found[name] = function
    return found


def _then(convert: Convert, validator: Convert) -> Convert:
    if convert is _any:
        return validator
    return lambda value: validator(convert(value))


def _make_plan(model: type[BaseModel]) -> Convert:
    if not model.__pydantic_complete__:
        model.model_rebuild()
    decorators = model.__pydantic_decorators__
    named = [*decorators.model_validators, *decorators.validators, *decorators.root_validators]
    if any(name not in _HARMLESS for name in named) or model.__pydantic_root_model__:
        raise Unsure
    after = _after_validators(model)
    config = dict(model.model_config)
    extra = config.get("extra", "ignore")
    if extra == "allow":
        raise Unsure
    forbid = extra == "forbid"
    shortcuts = "_accept_convenience_kwargs" in decorators.model_validators

    template: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any] | None]] = []
    keys: dict[str, tuple[str, Convert | None]] = {}
    for name, field in model.__pydantic_fields__.items():
        if field.validation_alias is not None and field.validation_alias != field.alias:
            raise Unsure
        if field.validate_default or field.default_factory_takes_validated_data:
            raise Unsure
        convert = _converter(field.annotation, config)
        if name in after:
            convert = _then(convert, after[name])
        step = (name, None if convert is _any else convert)
        keys[name] = step
        if field.alias:
            keys[field.alias] = step
        if field.default_factory is not None:
            template[name] = None
            factories.append((name, field.default_factory))
        elif field.default is PydanticUndefined:
            template[name] = None
            factories.append((name, None))
        elif isinstance(field.default, _IMMUTABLE):
            template[name] = field.default
        else:
            template[name] = None
            factories.append((name, functools.partial(copy.deepcopy, field.default)))
    post_init = model.__pydantic_post_init__ is not None
    fields_count = len(template)

    def construct(data: Any) -> Any:
        if type(data) is not dict:
            raise Unsure
        values = template.copy()
        given: set[str] = set()
        for key, value in data.items():
            step = keys.get(key)
            if step is None:
                if forbid or (shortcuts and key in _SHORTCUTS):
                    raise Unsure
                continue
            name, convert = step
            if name in given:
                raise Unsure  # a field under both its name and its alias
            given.add(name)
            values[name] = value if convert is None else convert(value)
        if len(given) < fields_count:
            for name, make in factories:
                if name not in given:
                    if make is None:
                        raise Unsure  # a required field missing: validation refuses it
                    values[name] = make()
        made = model.__new__(model)
        _setattr(made, "__dict__", values)
        _setattr(made, "__pydantic_fields_set__", given)
        _setattr(made, "__pydantic_extra__", None)
        _setattr(made, "__pydantic_private__", None)
        if post_init:
            made.model_post_init(None)
        return made

    return construct
