"""The options of the ``debezium-json`` format, shared by its decoder
(``debezium_json.py``) and its encoder (``debezium_encode.py``)."""

from __future__ import annotations

from deltaflow.formats.codec_support import bool_option, choice_option
from deltaflow.formats.codec_support import check_options as check_options_of
from deltaflow.formats.debezium_decimals import DEFAULT as DEFAULT_DECIMALS
from deltaflow.formats.debezium_decimals import ENCODINGS as DECIMAL_ENCODINGS
from deltaflow.formats.debezium_decimals import OPTION as DECIMALS_OPTION

NAME = "debezium-json"
OPTIONS = (
    "schema-include",
    "ignore-parse-errors",
    "timestamp-format.standard",
    "map-null-key.mode",
    "map-null-key.literal",
    "encode.decimal-as-plain-number",
    "encode.ignore-null-fields",
    "decimal-encoding",
    "before-image",
    "unavailable-value-placeholder",
)


def check_options(options: dict[str, str]) -> None:
    """Raise ``DeltaflowError`` for an unknown option or a bad option value."""
    check_options_of(NAME, options, OPTIONS)
    for key in OPTIONS:
        if key in ("schema-include", "ignore-parse-errors") or key.startswith("encode."):
            bool_option(NAME, options, key, False)
    choice_option(NAME, options, "timestamp-format.standard", ("SQL", "ISO-8601"), "SQL")
    choice_option(NAME, options, "map-null-key.mode", ("FAIL", "DROP", "LITERAL"), "FAIL")
    choice_option(NAME, options, "before-image", ("state", "message"), "state")
    decimal_encoding(options)


def decimal_encoding(options: dict[str, str]) -> str:
    """The table's ``decimal-encoding``: how DECIMAL values travel without a schema."""
    return choice_option(NAME, options, DECIMALS_OPTION, DECIMAL_ENCODINGS, DEFAULT_DECIMALS)
