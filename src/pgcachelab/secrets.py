"""Secrets in connection strings and URLs: found, masked, kept apart. Pure functions.

The one place that knows where libpq hides a secret (issue 48), for every printer, store writer
and child process of the lab:

- a URL's userinfo, `scheme://user:PASSWORD@host`: libpq ends the userinfo at its first '@' or
  '/', so '#', '?', ':' and '&' belong to the password; masked here from the first ':' after
  `://` to the last '@' of the text (a '@' or '/' the user meant as part of the password is
  masked too: more than libpq reads, never less);
- a query parameter, `?password=` or `&sslpassword=` (any case, percent-encoded names too),
  up to the next `&` that starts another libpq keyword, else to the end of the text;
- a key=value string, `password = 'it\\'s x'`: quoted with backslash escapes, or unquoted up to
  the next whitespace (`\\ ` escapes one), spaces allowed around '='.

Masking is conservative: a rule that cannot tell masks more. `redact` also cleans a message of
libpq's, which quotes the token it could not parse (a password with a space, a bad %-escape).
"""

import re
from typing import Any
from urllib.parse import unquote

MASK = "***"
# libpq's keywords whose values are secrets: those it displays as "*" (password, sslpassword,
# oauth_client_secret) and PostgreSQL 18's SCRAM keys, which log in as a password does.
SECRET_KEYWORDS = (
    "password",
    "sslpassword",
    "oauth_client_secret",
    "scram_client_key",
    "scram_server_key",
)
# libpq's connection keywords (PostgreSQL 18): a `&name=` of one ends a query parameter's value.
LIBPQ_KEYWORDS = frozenset(
    {
        *SECRET_KEYWORDS,
        "application_name", "channel_binding", "client_encoding", "connect_timeout", "dbname",
        "fallback_application_name", "gssdelegation", "gssencmode", "gsslib", "host",
        "hostaddr", "keepalives", "keepalives_count", "keepalives_idle", "keepalives_interval",
        "krbsrvname", "load_balance_hosts", "max_protocol_version", "min_protocol_version",
        "oauth_client_id", "oauth_issuer", "oauth_scope", "options", "passfile", "port",
        "replication", "require_auth", "requirepeer", "requiressl", "service", "servicefile",
        "ssl_max_protocol_version", "ssl_min_protocol_version", "sslcert", "sslcertmode",
        "sslcompression", "sslcrl", "sslcrldir", "sslkey", "sslkeylogfile", "sslmode",
        "sslnegotiation", "sslrootcert", "sslsni", "target_session_attrs", "tcp_user_timeout",
        "user",
    }
)  # fmt: skip

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_QUERY_KEY = re.compile(r"[?&](?P<key>[^=&?]*)=")
_KEY_VALUE = re.compile(
    r"(?<![\w?&%])(?:" + "|".join(SECRET_KEYWORDS) + r")\s*=\s*"
    r"(?P<value>'(?:\\.|[^'\\])*(?:'|\\?\Z)|(?:\\.|[^\s\\])*\\?)",
    re.IGNORECASE | re.DOTALL | re.ASCII,  # libpq's whitespace is ASCII's (isspace, C locale)
)
_QUOTED_TOKEN = re.compile(r'"([^"]*)"')


def _query_key(text: str) -> str:
    return unquote(text).strip().lower()


def _userinfo_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for scheme in _SCHEME.finditer(text):
        at = text.rfind("@", scheme.end())
        colon = text.find(":", scheme.end(), at) if at >= 0 else -1
        if colon >= 0:
            spans.append((colon + 1, at))
    return spans


def _query_spans(text: str) -> list[tuple[int, int]]:
    keys = list(_QUERY_KEY.finditer(text))
    spans = []
    for number, key in enumerate(keys):
        if _query_key(key["key"]) not in SECRET_KEYWORDS:
            continue
        end = len(text)
        for later in keys[number + 1 :]:
            if later.group().startswith("&") and _query_key(later["key"]) in LIBPQ_KEYWORDS:
                end = later.start()
                break
        if key.end() < end:
            spans.append((key.end(), end))
    return spans


def _key_value_spans(text: str) -> list[tuple[int, int]]:
    return [match.span("value") for match in _KEY_VALUE.finditer(text)]


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds secrets, by every rule at once (each reads the text as given), as
    sorted (start, end) pairs, overlapping and touching ones merged; empty values left out."""
    found = sorted(
        (start, end)
        for start, end in _userinfo_spans(text) + _query_spans(text) + _key_value_spans(text)
        if end > start
    )
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def mask_password(text: str) -> str:
    """`text` with every secret of a connection string or URL in it replaced by ***."""
    spans = secret_spans(text)
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], MASK]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def has_secret(text: str) -> bool:
    """True when `text` holds a password (or another secret) in any form masking knows."""
    return bool(secret_spans(text))


def _unescaped(value: str) -> str:
    """A key=value value as libpq reads it: quotes dropped, backslash escapes undone."""
    if value.startswith("'"):
        value = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
    return re.sub(r"\\(.)", r"\1", value, flags=re.DOTALL)


def secret_values(text: str) -> set[str]:
    """The secrets in `text` as written and as libpq reads them (unquoted, %-decoded)."""
    values = set()
    for start, end in secret_spans(text):
        written = text[start:end]
        values |= {written, unquote(written), _unescaped(written)}
    return {value for value in values if value}


def redact(message: str, source: str, values: tuple[str, ...] = ()) -> str:
    """`message` (libpq's, say) about the connection string `source`, without its secrets:
    masked, every secret of `source` (and `values`, as libpq parsed them) replaced, and every
    "quoted" token that is part of a secret or holds one (libpq quotes what it cannot parse)."""
    secrets = secret_values(source) | {value for value in values if value}
    if not secrets:
        return mask_password(message)

    def quoted(match: re.Match) -> str:
        token = match[1]
        if token and any(token in secret or secret in token for secret in secrets):
            return f'"{MASK}"'
        return match[0]

    text = _QUOTED_TOKEN.sub(quoted, message)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return mask_password(text)


def parse_failure(error: Exception, source: str, values: tuple[str, ...] = ()) -> str:
    """Why psycopg could not use the connection string `source`, on one line, redacted: libpq's
    words, or for a %-escape that decodes to no UTF-8 text (psycopg's UnicodeDecodeError) ours."""
    if isinstance(error, UnicodeDecodeError):
        return "a %-escape that is not UTF-8 text"
    return redact(" ".join(str(error).split()) or type(error).__name__, source, values)


def split_secrets(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the parameters without secrets, the secrets) of a parsed connection string; None values
    (libpq's unset) are left out of both."""
    public: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        (secret if key.lower() in SECRET_KEYWORDS else public)[key] = value
    return public, secret


def service_file_text(service: str, params: dict) -> str:
    """A libpq service file (pg_service.conf) with one group, `service`, of `params`.

    libpq reads a line's value verbatim but for its trailing whitespace: a value with a line
    break or trailing whitespace cannot be written (ValueError).
    """
    lines = [f"[{service}]"]
    for key, value in params.items():
        text = str(value)
        if "\n" in text or "\r" in text or "\0" in text or text != text.rstrip():
            raise ValueError(f"{key}: a line break or trailing whitespace")
        lines.append(f"{key}={text}")
    return "\n".join(lines) + "\n"
