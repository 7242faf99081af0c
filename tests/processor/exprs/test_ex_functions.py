"""Built-in functions; expected values are the examples of Flink's "System (Built-in)
Functions" page where it gives one, otherwise what the function's definition implies."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from ex_helpers import call, col, ev, i, lit, null, s, unit

from deltaflow.formats.errors import DeltaflowError


def test_string_doc_examples() -> None:
    assert ev(call("LPAD", s("hi"), i(4), s("??"))) == "??hi"
    assert ev(call("LPAD", s("hi"), i(1), s("??"))) == "h"
    assert ev(call("RPAD", s("hi"), i(4), s("??"))) == "hi??"
    assert ev(call("RPAD", s("hi"), i(1), s("??"))) == "h"
    assert ev(call("REPLACE", s("hello world"), s("world"), s("flink"))) == "hello flink"
    assert ev(call("REGEXP_REPLACE", s("foobar"), s("oo|ar"), s(""))) == "fb"
    assert ev(call("REGEXP_EXTRACT", s("foothebar"), s("foo(.*?)(bar)"), i(2))) == "bar"
    assert ev(call("TO_BASE64", s("hello world"))) == "aGVsbG8gd29ybGQ="
    assert ev(call("FROM_BASE64", s("aGVsbG8gd29ybGQ="))) == "hello world"
    assert ev(call("ASCII", s("abc"))) == 97
    assert ev(call("CHR", i(97))) == "a"
    assert ev(call("CONCAT", s("AA"), s("BB"), s("CC"))) == "AABBCC"
    assert (
        ev(call("CONCAT_WS", s("~"), s("AA"), null("STRING"), s("BB"), s(""), s("CC")))
        == "AA~BB~~CC"
    )
    assert ev(call("REPEAT", s("ab"), i(3))) == "ababab"
    assert ev(call("REVERSE", s("abc"))) == "cba"


def test_string_basics() -> None:
    assert ev(call("UPPER", s("aBc"))) == "ABC"
    assert ev(call("LOWER", s("aBc"))) == "abc"
    assert ev(call("TRIM", s("  hi  "))) == "hi"
    assert ev(call("LTRIM", s("  hi  "))) == "hi  "
    assert ev(call("RTRIM", s("  hi  "))) == "  hi"
    assert ev(call("TRIM", unit("LEADING"), s("x"), s("xxhixx"))) == "hixx"
    assert ev(call("TRIM", unit("BOTH"), s("xy"), s("xyhiyx"))) == "hi"
    assert ev(call("CHAR_LENGTH", s("héllo"))) == 5
    assert ev(call("INITCAP", s("hello wORLD-foo"))) == "Hello World-Foo"
    assert ev(call("LEFT", s("hello"), i(2))) == "he"
    assert ev(call("RIGHT", s("hello"), i(2))) == "lo"
    assert ev(call("LEFT", s("hello"), i(-1))) == ""
    assert ev(call("MD5", s("abc"))) == "900150983cd24fb0d6963f7d28e17f72"
    assert ev(call("SHA1", s("abc"))) == "a9993e364706816aba3e25717850c26c9cd0d89d"
    assert ev(call("SHA256", s(""))).startswith("e3b0c44298fc1c14")
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", ev(call("UUID"))
    )


def test_substring_and_positions() -> None:
    assert ev(call("SUBSTRING", s("hello world"), i(7))) == "world"
    assert ev(call("SUBSTRING", s("hello world"), i(1), i(5))) == "hello"
    assert ev(call("SUBSTR", s("hello"), i(-3), i(2))) == "ll"
    assert ev(call("SUBSTRING", s("hello"), i(-9), i(2))) == ""
    assert ev(call("SUBSTRING", s("hello"), i(2), i(-1))) is None
    assert ev(call("LPAD", s("hello"), i(2), s(""))) is None
    assert ev(call("SPLIT_INDEX", s(""), s(","), i(0))) is None
    assert ev(call("POSITION", s("lo"), s("hello"))) == 4
    assert ev(call("POSITION", s("z"), s("hello"))) == 0
    assert ev(call("LOCATE", s("l"), s("hello"))) == 3
    assert ev(call("LOCATE", s("l"), s("hello"), i(4))) == 4
    assert ev(call("INSTR", s("hello"), s("l"))) == 3


def test_regex_and_split() -> None:
    assert ev(call("REGEXP", s("abc123"), s("[0-9]+"))) is True
    assert ev(call("REGEXP", s("abc"), s("^[0-9]+$"))) is False
    # Flink quotes the replacement: "$1" is literal text, not a group reference
    assert ev(call("REGEXP_REPLACE", s("2024-01-02"), s("(\\d+)-"), s("$1/"))) == "$1/$1/02"
    assert ev(call("REGEXP", s("abc"), s(""))) is False
    assert ev(call("CHR", i(353))) == "a"  # 353 & 0xFF = 97
    assert ev(call("CHR", i(-1))) == ""
    assert ev(call("REGEXP_EXTRACT", s("abc"), s("x(.)"), i(1))) is None
    assert ev(call("SPLIT_INDEX", s("a,b,,c"), s(","), i(3))) == "c"
    assert ev(call("SPLIT_INDEX", s("a,b"), s(","), i(5))) is None
    assert ev(call("UPPER", col(0, "STRING")), (None,)) is None


def test_json_value() -> None:
    doc = s('{"a": {"b": [10, "x", true]}}')
    assert ev(call("JSON_VALUE", doc, s("$.a.b[0]"))) == "10"
    assert ev(call("JSON_VALUE", doc, s("$.a.b[2]"))) == "true"
    assert ev(call("JSON_VALUE", doc, s("$.a"))) is None
    assert ev(call("JSON_VALUE", doc, s("$.missing"))) is None


def test_math() -> None:
    assert ev(call("ABS", i(-3))) == 3
    assert ev(call("ABS", i(-(2**31)))) == -(2**31)  # Java Math.abs(Integer.MIN_VALUE)
    assert ev(call("ROUND", lit(Decimal("125.315"), "DECIMAL(6, 3)"), i(2))) == Decimal("125.32")
    assert ev(call("ROUND", lit(2.5, "DOUBLE"))) == 3.0
    assert ev(call("ROUND", lit(-2.5, "DOUBLE"))) == -3.0
    assert ev(call("ROUND", i(125), i(-1))) == 130
    assert ev(call("TRUNCATE", lit(Decimal("42.324"), "DECIMAL(5, 3)"), i(2))) == Decimal("42.32")
    assert ev(call("TRUNCATE", lit(42.324, "DOUBLE"), i(2))) == 42.32
    assert ev(call("FLOOR", lit(Decimal("-1.5"), "DECIMAL(2, 1)"))) == Decimal("-2")
    assert ev(call("CEIL", lit(1.2, "DOUBLE"))) == 2.0
    assert ev(call("MOD", i(7), i(3))) == 1
    assert ev(call("POWER", i(2), i(10))) == 1024.0
    assert ev(call("SQRT", i(16))) == 4.0
    assert math.isnan(ev(call("SQRT", i(-1))))
    assert ev(call("LN", i(0))) == -math.inf
    assert ev(call("LOG10", i(1000))) == 3.0
    assert ev(call("LOG2", i(8))) == 3.0
    assert ev(call("LOG", i(2), i(8))) == 3.0
    assert ev(call("EXP", i(0))) == 1.0
    assert ev(call("SIGN", i(-5))) == -1
    assert ev(call("SIGN", lit(Decimal("2.50"), "DECIMAL(3, 2)"))) == Decimal("1.00")
    assert ev(call("PI")) == math.pi


def test_rand() -> None:
    x = ev(call("RAND"))
    assert 0.0 <= x < 1.0
    seeded = [ev(call("RAND", i(42))) for _ in range(2)]
    assert seeded[0] == seeded[1]  # same seed, same first value
    assert 0 <= ev(call("RAND_INTEGER", i(10))) < 10
    with pytest.raises(DeltaflowError, match="the seed of RAND_INTEGER must be a constant"):
        ev(call("RAND_INTEGER", col(0, "INT"), i(10)), (1,))
