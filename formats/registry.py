"""The table of formats: a format name to the module implementing it.

Each module exposes ``make_decoder(name, spec)`` and ``make_encoder(name, spec)``;
it is imported the first time its format is asked for, so a job pays only for the
formats it uses (fastavro is not imported for a debezium-json job). Upsert key and
value helpers live in ``deltaflow.formats.upsert``, not in this table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.spec import ON_ERROR_CHOICES, Decoder, Encoder, FormatSpec

MODULES: dict[str, str] = {
    "debezium-json": "deltaflow.formats.debezium_json",
    "json": "deltaflow.formats.json_format",
    "raw": "deltaflow.formats.raw_format",
    "avro": "deltaflow.formats.avro_format",
    "avro-confluent": "deltaflow.formats.avro_confluent",
    "debezium-avro-confluent": "deltaflow.formats.avro_confluent",
}

Factory = Callable[[str, FormatSpec], object]

# name -> (make_decoder, make_encoder), filled as modules are imported
_FACTORIES: dict[str, tuple[Factory, Factory]] = {}


def format_names() -> list[str]:
    """Every format name deltaflow knows, sorted."""
    return sorted(MODULES)


def create_decoder(name: str, spec: FormatSpec) -> Decoder:
    """The decoder of format ``name`` for ``spec``; ``DeltaflowError`` for an unknown name."""
    _check_policy(name, spec)
    return _factories(name)[0](name, spec)  # type: ignore[return-value]


def create_encoder(name: str, spec: FormatSpec) -> Encoder:
    """The encoder of format ``name`` for ``spec``; ``DeltaflowError`` for an unknown name."""
    _check_policy(name, spec)
    return _factories(name)[1](name, spec)  # type: ignore[return-value]


def _factories(name: str) -> tuple[Factory, Factory]:
    found = _FACTORIES.get(name)
    if found is None:
        module = _import(name)
        found = (module.make_decoder, module.make_encoder)
        _FACTORIES[name] = found
    return found


def _import(name: str) -> ModuleType:
    path = MODULES.get(name)
    if path is None:
        valid = ", ".join(f"'{n}'" for n in format_names())
        raise DeltaflowError(f"unknown format '{name}'; valid formats are {valid}")
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name == path:
            raise DeltaflowError(
                f"format '{name}' is not part of this deltaflow build (module {path} is missing)"
            ) from None
        raise DeltaflowError(
            f"format '{name}' needs the Python package '{exc.name}'; install it with pip"
        ) from None


def _check_policy(name: str, spec: FormatSpec) -> None:
    if spec.on_error not in ON_ERROR_CHOICES:
        choices = ", ".join(f"'{c}'" for c in ON_ERROR_CHOICES)
        raise DeltaflowError(
            f"bad-input policy '{spec.on_error}' for format '{name}' is not one of {choices}"
        )
