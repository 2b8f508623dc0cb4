"""pgcachelab: a laboratory for PostgreSQL performance and caches."""

__version__ = "0.1.0"
