"""The generated databases and how to reach them.

`DATABASES` maps a name to its `DatabaseSpec`; `ensure_sqlite` / `ensure_duckdb` build and cache files;
`load_postgres` loads one into a server; `engines` opens read-only connections to any of them.
"""

from __future__ import annotations

from . import erp, finance, flights, hospital, hr, retail, school
from .build import cache_dir, ensure_duckdb, ensure_sqlite, load_postgres
from .schema import Column, DatabaseSpec, Table

DATABASES: dict[str, DatabaseSpec] = {
    spec.name: spec for spec in (retail.SPEC, hospital.SPEC, flights.SPEC, hr.SPEC, school.SPEC, finance.SPEC,
                                 *erp.SPECS)
}


def get_database(name: str) -> DatabaseSpec:
    """The spec called `name`; raises KeyError listing the known names."""
    try:
        return DATABASES[name]
    except KeyError:
        raise KeyError(f"unknown database {name!r}; known: {', '.join(DATABASES)}") from None


__all__ = ["DATABASES", "Column", "DatabaseSpec", "Table", "cache_dir", "ensure_duckdb", "ensure_sqlite",
           "get_database", "load_postgres"]
