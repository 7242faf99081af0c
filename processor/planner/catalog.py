"""The catalog of a job: tables (connector options verbatim), views and Python functions."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType
from deltaflow.processor.sql.ddl import Column, CreateTable
from deltaflow.processor.sql.errors import closest

CATALOG = "default_catalog"
DATABASE = "default_database"
CHANGELOG_FORMATS = frozenset(
    {"debezium-json", "debezium-avro-confluent", "canal-json", "maxwell-json", "ogg-json"}
)


@dataclass(frozen=True)
class Table:
    """A CREATE TABLE: columns in declared order, PRIMARY KEY columns NOT NULL as in Flink."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    watermark: tuple[str, exp.Expr] | None
    options: dict[str, str]

    @property
    def qualified(self) -> str:
        return f"{CATALOG}.{DATABASE}.{self.name}"

    @property
    def connector(self) -> str:
        return self.options.get("connector", "")

    @property
    def format(self) -> str:
        return self.options.get("format", self.options.get("value.format", ""))

    @property
    def physical(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.expr is None and not c.is_metadata)

    @property
    def metadata(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.is_metadata)

    @property
    def persisted(self) -> tuple[Column, ...]:
        """Columns a sink writes: physical and non-virtual metadata columns."""
        return tuple(c for c in self.columns if c.expr is None and not c.virtual)


@dataclass
class Catalog:
    tables: dict[str, Table] = field(default_factory=dict)
    views: dict[str, tuple[exp.Query, tuple[str, ...]]] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)  # upper-case name -> 'module.attr'

    def add_table(self, ddl: CreateTable) -> None:
        self._check_new(ddl.name, ddl.pos)
        names = [c.name for c in ddl.columns]
        for key in ddl.primary_key:
            if key not in names:
                raise SqlError(
                    f"PRIMARY KEY column {key!r} is not a column of {ddl.name}{closest(key, names)}",
                    *ddl.pos,
                )
        columns = tuple(_not_null(c) if c.name in ddl.primary_key else c for c in ddl.columns)
        self.tables[ddl.name] = Table(
            ddl.name, columns, ddl.primary_key, ddl.watermark, dict(ddl.options)
        )

    def add_view(
        self, name: str, query: exp.Query, columns: tuple[str, ...], pos: tuple[int, int]
    ) -> None:
        self._check_new(name, pos)
        self.views[name] = (query, columns)

    def table(self, name: str, pos: tuple[int, int]) -> Table:
        found = self.tables.get(_short(name))
        if found is None:
            where = (
                ""
                if _short(name) in self.views
                else closest(_short(name), [*self.tables, *self.views])
            )
            raise SqlError(f"Object '{name}' not found; create it with CREATE TABLE{where}", *pos)
        return found

    def _check_new(self, name: str, pos: tuple[int, int]) -> None:
        if name in self.tables or name in self.views:
            raise SqlError(
                f"{name!r} is already defined; give the new table or view another name", *pos
            )


def _short(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 3 and parts[:2] == [CATALOG, DATABASE]:
        return parts[2]
    return name


def _not_null(column: Column) -> Column:
    dtype: DataType | None = column.type.not_null() if column.type is not None else None
    return Column(column.name, dtype, column.expr, column.metadata_key, column.virtual, column.pos)
