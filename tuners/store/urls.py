"""Storage URLs as lwnas shows them: passwords masked everywhere, SQLite paths, drivers' errors in one line."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from urllib.parse import unquote

# user:password@ up to the last @ before any query string (a password may hold @, / or : unescaped), else
# up to the last @ at all (a password holding ?); leading blanks and a mistyped `scheme:/` are masked too
_USERINFO = re.compile(r"^(\s*[A-Za-z][A-Za-z0-9+.\-]*:/*[^:@/?]*):([^?]*|.*)@")


_QUERY_SECRET = re.compile(r"((?:password|passwd|pwd|sslpassword)=)([^&]*)", re.IGNORECASE)


def masked(url: str) -> str:
    """The storage URL with any password replaced by ***, by pattern, whether or not the URL parses."""
    text = _USERINFO.sub(r"\1:***@", url)
    return _QUERY_SECRET.sub(r"\1***", text)


def storage_arg(url: str) -> str:
    """``url`` as a shell word for a printed command; a URL with a password is left to LWNAS_STORAGE."""
    return '"$LWNAS_STORAGE"' if masked(url) != url else shlex.quote(url)


def secrets_of(url: str) -> list[str]:
    """The passwords written in ``url`` (what ``masked`` hides), longest first."""
    userinfo = _USERINFO.match(url)
    found = ([userinfo.group(2)] if userinfo else []) + [m.group(2) for m in _QUERY_SECRET.finditer(url)]
    # a driver that splits the URL elsewhere may echo a piece of the password (`pre@secret` -> `secret@host`)
    found += [unquote(s) for s in found]  # drivers decode %-escapes before they echo a password
    pieces = [piece for s in found for piece in re.split(r"[@:/]", s)]
    return sorted({s for s in found + pieces if s}, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's error message, say) with the URL masked and every password in it replaced."""
    text = text.replace(url, masked(url))
    for secret in secrets_of(url):
        text = text.replace(secret, "***")
    return text


def first_line(exc: BaseException) -> str:
    """The first line of a driver's error (SQLAlchemy wraps it in ``orig`` and appends SQL and links)."""
    if isinstance(exc.__cause__, Exception):  # Optuna wraps the driver's error in a generic one of its own
        exc = exc.__cause__
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and for SQLite in memory)."""
    if not url.startswith("sqlite:///") or ":memory:" in url:
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return Path(path) if path and not path.startswith("file:") else None


# `sqlite://` then a name: SQLAlchemy reads the name as a host and finds no database path in the URL
_SQLITE_TWO_SLASHES = re.compile(r"^(sqlite(?:\+\w+)?://)([^/?].*)$")


def sqlite_two_slashes(url: str) -> str | None:
    """The three-slash form of a SQLite URL written with two (``sqlite://x.db`` -> ``sqlite:///x.db``), else None."""
    found = _SQLITE_TWO_SLASHES.match(url.strip())
    return f"{found.group(1)}/{found.group(2)}" if found else None
