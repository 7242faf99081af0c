"""The debezium-json encoder, as Flink's ``DebeziumJsonSerializationSchema`` writes.

Flink cannot merge a -U/+U pair into one Debezium update, so every change becomes
one message: ``+I`` and ``+U`` are ``{"before":null,"after":{..},"op":"c"}``, ``-U``
and ``-D`` are ``{"before":{..},"after":null,"op":"d"}``. Row values are written
by the rules of Flink's JSON format (shared with the ``json`` format in
``json_convert``): DECIMAL as a JSON number, DATE ``yyyy-MM-dd``, TIMESTAMP
``yyyy-MM-dd HH:mm:ss[.fraction]`` (``T`` with ``timestamp-format.standard`` =
``ISO-8601``), TIMESTAMP_LTZ the same with a ``Z``, BYTES as base64. The
``schema-include`` option does not change what is written (Flink writes no schema
either); ``encode.ignore-null-fields`` leaves out null fields, ``before`` and
``after`` included.
"""

from __future__ import annotations

import msgspec

from deltaflow.formats import json_convert as jc
from deltaflow.formats.changelog import ADDS, Batch
from deltaflow.formats.codec_support import (
    bool_option,
    choice_option,
    compile_row_writer,
    reason_of,
)
from deltaflow.formats.debezium_options import NAME, check_options
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.json_text import compile_change_writer, text_writable
from deltaflow.formats.spec import FormatSpec


class DebeziumJsonEncoder:
    """Encodes each change of a batch as one Debezium JSON message."""

    def __init__(self, spec: FormatSpec) -> None:
        options = spec.options
        check_options(options)
        if spec.metadata:
            keys = ", ".join(f"'{k}'" for k, _ in spec.metadata)
            raise DeltaflowError(
                f"format '{NAME}' cannot write metadata ({keys}); Flink's debezium-json "
                "metadata is read-only, declare those columns VIRTUAL"
            )
        mode = choice_option(
            NAME, options, "map-null-key.mode", ("FAIL", "DROP", "LITERAL"), "FAIL"
        )
        standard = choice_option(
            NAME, options, "timestamp-format.standard", ("SQL", "ISO-8601"), "SQL"
        )
        opts = jc.EncodeOptions(
            iso=standard == "ISO-8601",
            null_key_mode=mode,
            null_key_literal=options.get("map-null-key.literal", "null"),
            plain=bool_option(NAME, options, "encode.decimal-as-plain-number", False),
        )
        self.ignore_nulls = bool_option(NAME, options, "encode.ignore-null-fields", False)
        try:
            convs = [jc.encoder_for(t, opts) for _, t in spec.physical]
        except TypeError as exc:
            raise DeltaflowError(f"format '{NAME}': {exc}") from None
        self._image = compile_row_writer(spec.names, convs)
        self._write = msgspec.json.Encoder(decimal_format="number").encode
        self._changes = None  # integer, DECIMAL, string and boolean columns: text templates
        if text_writable(spec.names, spec.types, opts.plain, self.ignore_nulls):
            self._changes = compile_change_writer(spec.names, spec.types)

    def encode(self, batch: Batch) -> list[bytes | None]:
        image, write = self._image, self._write
        out: list[bytes | None] = []
        try:
            if self._changes is not None:
                return self._changes(batch.kinds, batch.rows)  # type: ignore[return-value]
            if self.ignore_nulls:
                for kind, row in zip(batch.kinds, batch.rows, strict=True):
                    values = {k: v for k, v in image(row).items() if v is not None}
                    side = "after" if ADDS[kind] else "before"
                    out.append(write({side: values, "op": "c" if ADDS[kind] else "d"}))
                return out
            for kind, row in zip(batch.kinds, batch.rows, strict=True):
                if ADDS[kind]:
                    out.append(write({"before": None, "after": image(row), "op": "c"}))
                else:
                    out.append(write({"before": image(row), "after": None, "op": "d"}))
        except (ValueError, TypeError, AttributeError) as exc:
            raise FormatError(
                f"cannot encode a change as Debezium JSON: {reason_of(exc)}",
                hint="check that the row values match the sink table's column types",
            ) from None
        return out
