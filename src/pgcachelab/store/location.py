"""Where runs are stored: parsing a `--store` value and masking its password. Pure functions.

A store is a SQLite file (the default, `results.sqlite` in the lab directory) or a PostgreSQL
database given by a `postgresql://` URL. A URL may carry a password for the connection; it is
never written into results and never shown: every message uses `masked()` (pgcachelab/secrets.py
masks every form of it).
"""

import re
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.errors import UserError
from pgcachelab.secrets import MASK as MASK  # re-exported: the stores' messages use them
from pgcachelab.secrets import has_secret
from pgcachelab.secrets import mask_password as mask_password

STORE_FILE = "results.sqlite"
POSTGRESQL_SCHEMES = ("postgresql", "postgres")
ENV_VAR = "PGCACHELAB_STORE"
STORE_HINT = (
    "give a postgresql://user@host/dbname URL (password in PGPASSWORD or ~/.pgpass), "
    "sqlite:PATH, or the path of a SQLite file or lab directory"
)

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$", re.DOTALL)
_CONNINFO = re.compile(r"^\s*[A-Za-z_]+\s*=")


@dataclass(frozen=True)
class StoreLocation:
    kind: str  # "sqlite" or "postgresql"
    url: str | None = None  # postgresql: the URL as given (may hold a password: never shown)
    path: Path | None = None  # sqlite: the file

    def masked(self) -> str:
        """How messages name this store: the file, or the URL with its password masked."""
        if self.kind == "sqlite" or self.url is None:
            return str(self.path)
        return mask_password(self.url)

    def password_in_url(self) -> bool:
        """A password or another secret (?sslpassword=...) in the URL, in any form."""
        return self.kind == "postgresql" and self.url is not None and has_secret(self.url)


def parse_store(value: str, option: str = "--store") -> StoreLocation:
    """A `--store` value (or spec key, or $PGCACHELAB_STORE) as a location; UserError if bad.

    A path that is an existing directory means that lab directory's results.sqlite.
    """
    value = value.strip()
    if not value:
        raise UserError(f"{option}: empty value", STORE_HINT)
    match = _URL.match(value)
    if match:
        scheme = match["scheme"].lower()
        if scheme in POSTGRESQL_SCHEMES:
            return StoreLocation("postgresql", url=value)
        if scheme == "sqlite":  # sqlite:///abs/path, as SQLAlchemy writes it
            return _sqlite(match["rest"] or "", option)
        raise UserError(
            f"{option}: unknown store scheme {scheme + '://'!r} in {mask_password(value)!r}",
            STORE_HINT,
        )
    if value.lower().startswith("sqlite:"):
        return _sqlite(value[len("sqlite:") :], option)
    if _CONNINFO.match(value):
        raise UserError(
            f"{option}: a key=value connection string is not a store: {mask_password(value)!r}",
            "write it as a URL, e.g. postgresql://lab@/results?host=/var/run/postgresql",
        )
    return _sqlite(value, option)


def _sqlite(path_text: str, option: str) -> StoreLocation:
    if not path_text:
        raise UserError(f"{option}: no file after 'sqlite:'", STORE_HINT)
    path = Path(path_text)
    if path.is_dir():
        path = path / STORE_FILE
    return StoreLocation("sqlite", path=path)


def lab_dir_store(lab_dir: Path) -> StoreLocation:
    """The default: the SQLite file in the lab directory."""
    return StoreLocation("sqlite", path=Path(lab_dir) / STORE_FILE)


def choose_store(
    option: str | None, spec_value: str | None, environment: str | None, lab_dir: Path
) -> StoreLocation:
    """--store, then the spec's `store` key, then $PGCACHELAB_STORE, then the lab directory.

    The spec outranks the environment: a spec that names its store means it for that experiment.
    """
    if option:
        return parse_store(option, "--store")
    if spec_value:
        return parse_store(spec_value, "store")
    if environment:
        return parse_store(environment, ENV_VAR)
    return lab_dir_store(lab_dir)
