"""One redaction helper, applied before anything leaves the process for a file.

Why one: secrets reach files by several roads — a server that echoes the ``Authorization`` header
in an error body (stored as ``Response.error_detail``, so in the records and the HTML browser), a
key in a base URL's userinfo (``https://user:KEY@host``: the model fingerprint, the manifest, the
response cache and its audit log), a header written in a model's ``options.headers`` (the
manifest), an environment value pasted on the command line (``argv``).  Each writer calls
:func:`redact` (objects) or :func:`redact_text` (strings); what it removes:

* every value of an environment variable whose name looks secret (``*KEY*``, ``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``), plus the value of any variable a config names in
  ``api_key_env`` and every value passed to :func:`register_secret`;
* the userinfo of any URL (``scheme://***@host``) and the value of any secret-looking query
  parameter (``?api_key=***``, ``&access_token=***``, ``sig=***``);
* ``Bearer``/``Basic`` credentials, and the values of secret headers in any mapping stored under
  a ``headers`` key: a secret-looking name (``Authorization``, ``X-Auth``, ``Cookie``, ``*key*``,
  ``*token*``, ``*secret*``, ``*password*``, ``*session*``) or a value that looks like a key (one
  token of 16+ letters and digits, whatever the header is called).

Redacted text reads ``***`` (:data:`REDACTED`); :func:`find_redacted` tells a reader (``run
--resume``) that a config lost a secret and cannot be replayed as is.

Some roads are closed rather than redacted: generation settings (``--gen-kwargs``, ``settings.extra``,
an openai model's ``options.extra_body``) enter the model fingerprint, which names every record,
cache row and export; a key there could only be hidden by breaking that identity.
:func:`secret_setting` tells such a setting (``api_key``, ``authorization``, ``*token``,
``password``, ``*key``, ``*secret``, ``headers``, a ``Bearer`` value) and the readers refuse it
with :data:`KEY_HINT`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

REDACTED = "***"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
SECRET_HEADER = re.compile(
    r"^(cookie|set-cookie)$|auth|key|token|secret|passw|credential|session|signature", re.IGNORECASE
)
#: a URL query parameter whose name looks secret (``?api_key=...``, ``&access_token=...``, ``sig=``)
_QUERY_SECRET = re.compile(
    r"(?P<name>[?&;][A-Za-z0-9_.\-]*(?:key|token|secret|passw|auth|sig|credential)"
    r"[A-Za-z0-9_.\-]*=)(?P<value>[^&#\s\"'<>]+)",
    re.IGNORECASE,
)
#: a header value that looks like a key whatever the header is called: one long token of key
#: characters with both letters and digits (``sk-...``, a JWT, a hex or base64 secret)
_KEYLIKE = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9._~+/=:\-]{16,}$")
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<info>[^/?#@\s\"']+)@")
_CREDENTIAL = re.compile(r"\b(?P<kind>Bearer|Basic|Token)\s+(?P<value>[A-Za-z0-9._~+/=\-]{6,})", re.IGNORECASE)
#: a generation-setting name that carries a credential: split at ``_ - .`` (``x-api-key``,
#: ``extra_headers``), a last piece ending in key/token(s are counts: ``max_tokens`` stays), any piece
#: holding secret/passw/auth/credential/cookie, or a last piece ``header(s)``
_SETTING_PIECES = re.compile(r"[_\-.\s]+")
_SETTING_ANY = re.compile(r"secret|passw|^pwd$|^auth|credential|cookie|bearer", re.IGNORECASE)
_SETTING_LAST = re.compile(r"key$|^token$|^headers?$", re.IGNORECASE)
#: where a key belongs instead (the pointer every refusal gives)
KEY_HINT = (
    "give the key with --api-key-env VAR (or api_key_env: VAR in a config): only the variable's name "
    "is stored, the key is read from the environment and sent as a Bearer header"
)
_MIN_LEN = 6  # shorter values ("1", "true") would redact ordinary words
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret this process handles (an API key read from the environment) so that every
    later :func:`redact` removes it, whatever road it takes."""
    if isinstance(value, str) and len(value.strip()) >= _MIN_LEN:
        _registered.add(value.strip())


def _env_secrets() -> set[str]:
    return {v for k, v in os.environ.items() if SECRET_NAME.search(k) and v and len(v) >= _MIN_LEN}


def looks_like_key(value: Any) -> bool:
    """A header value that reads as a credential: one long token of letters and digits."""
    return isinstance(value, str) and bool(_KEYLIKE.match(value.strip()))


def secret_header(name: Any, value: Any) -> bool:
    """A header whose value is never written: a secret-looking name (``Authorization``,
    ``X-Auth``, ``*key*``, ``*token*``, ...) or a value that looks like a key (``X-Custom: sk-...``)."""
    return isinstance(value, str) and (bool(SECRET_HEADER.search(str(name))) or looks_like_key(value))


def header_secrets(headers: Mapping[str, Any] | None) -> set[str]:
    """The secret values of a header mapping: whole values of secret headers (:func:`secret_header`)
    and the credential part of ``Bearer X`` / ``Basic X``."""
    out: set[str] = set()
    for k, v in (headers or {}).items():
        if not secret_header(k, v):
            continue
        if len(v) >= _MIN_LEN:
            out.add(v)
        m = _CREDENTIAL.search(v)
        if m:
            out.add(m.group("value"))
    return out


def secret_setting(name: Any, value: Any = None) -> bool:
    """A generation setting that would carry a credential into the fingerprint, the manifest, the
    records and the request body: a secret-looking name (module docstring) or a credential value
    (``Bearer ...``, ``Basic ...``).  ``max_tokens``, ``top_k``, ``stop_token_ids`` are not."""
    pieces = [p for p in _SETTING_PIECES.split(str(name).strip()) if p]
    if pieces and (_SETTING_LAST.search(pieces[-1]) or any(_SETTING_ANY.search(p) for p in pieces)):
        return True
    return isinstance(value, str) and bool(_CREDENTIAL.search(value))


def secret_settings(settings: Mapping[str, Any] | None) -> list[str]:
    """The names of :func:`secret_setting` entries of a mapping, in order (never their values)."""
    return [str(k) for k, v in (settings or {}).items() if secret_setting(k, v)]


def refuse_secret_settings(settings: Mapping[str, Any] | None) -> None:
    """``ValueError`` (for a pydantic validator) naming the first :func:`secret_setting` entry."""
    found = secret_settings(settings)
    if found:
        raise ValueError(f"{found[0]!r} looks like a credential; {KEY_HINT}")


def strip_userinfo(url: str) -> str:
    """``host[:port]`` of a URL without its ``user:password@`` part (for fingerprints)."""
    parts = urlsplit(url)
    return parts.netloc.rpartition("@")[2]


def redact_text(text: str, secrets: Iterable[str] = (), headers: Mapping[str, Any] | None = None) -> str:
    """``text`` with known secrets, URL userinfo and bearer/basic credentials replaced by ``***``."""
    if not isinstance(text, str) or not text:
        return text
    known = set(secrets) | _registered | _env_secrets() | header_secrets(headers)
    for s in sorted(known, key=len, reverse=True):  # longest first: a key inside "Bearer key"
        if s and s in text:
            text = text.replace(s, REDACTED)
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    if "=" in text:
        text = _QUERY_SECRET.sub(lambda m: f"{m.group('name')}{REDACTED}", text)
    return _CREDENTIAL.sub(lambda m: f"{m.group('kind')} {REDACTED}", text)


def _config_secrets(obj: Any, out: set[str]) -> None:
    """Secrets a config itself points at: values of the variables its ``api_key_env`` fields name
    and the secret headers it writes out."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "api_key_env" and isinstance(v, str) and os.environ.get(v):
                out.add(os.environ[v])
            elif str(k).lower() == "headers" and isinstance(v, dict):
                out |= header_secrets(v)
            _config_secrets(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _config_secrets(v, out)


def redact(obj: Any, secrets: Iterable[str] | None = None) -> Any:
    """A copy of ``obj`` (JSON-like: dicts, lists, strings) with every secret removed; see the
    module docstring.  Values of secret-looking headers become ``***`` whole."""
    if secrets is None:
        found: set[str] = set()
        _config_secrets(obj, found)
        secrets = found
    secrets = [s for s in secrets if isinstance(s, str) and len(s) >= _MIN_LEN]
    return _walk(obj, secrets, in_headers=False)


def _walk(obj: Any, secrets: list[str], in_headers: bool) -> Any:
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if in_headers and secret_header(k, v):
                out[k] = REDACTED
            else:
                out[k] = _walk(v, secrets, in_headers=str(k).lower() == "headers")
        return out
    if isinstance(obj, (list, tuple)):
        return [_walk(v, secrets, in_headers=False) for v in obj]
    return obj


def find_redacted(obj: Any, where: str = "") -> str | None:
    """The dotted location of the first string holding ``***`` (a secret removed on writing)."""
    if isinstance(obj, str):
        return where or "." if REDACTED in obj else None
    items: Iterable[tuple[Any, Any]]
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return None
    for k, v in items:
        hit = find_redacted(v, f"{where}.{k}" if where else str(k))
        if hit:
            return hit
    return None
