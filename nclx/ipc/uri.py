"""The URI a server hands to its clients.

``tcp://HOST:PORT?want_data=N&free_data=M&remote_handle=BASE64``: the tags
of the two client messages (uint64) and, when bodies travel in shared
memory, the segment's name as ``SharedMemory(name=...)`` opens it, in
URL-safe base64 (RFC 4648 section 5; padding optional on input).  Any
other query parameter is a ValueError naming it (and the known name it is
closest to, for a typo).
"""
import base64
import binascii
import difflib
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from nclx.ipc.wire import U64_MAX

DEFAULT_WANT_DATA = 1
DEFAULT_FREE_DATA = 2
_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]{1,200}")       # used with fullmatch
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_\-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME_RE = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
#: the query parameters of the protocol's URI; any other is an error (a
#: typo such as ``remote_hndle`` must not silently give a TCP-only client)
PARAMETERS = ("want_data", "free_data", "remote_handle")


@dataclass(frozen=True)
class Endpoint:
    """A parsed URI."""
    host: str
    port: int
    want_data: int = DEFAULT_WANT_DATA
    free_data: int | None = None
    segment: str | None = None      # the decoded remote_handle

    def uri(self):
        host = f"[{self.host.replace('%', '%25')}]" if ":" in self.host else self.host
        q = f"want_data={self.want_data}"
        if self.free_data is not None:
            q += f"&free_data={self.free_data}"
        if self.segment is not None:
            handle = base64.urlsafe_b64encode(self.segment.encode()).decode().rstrip("=")
            q += f"&remote_handle={handle}"
        return f"tcp://{host}:{self.port}?{q}"

    __str__ = uri


def _u64(name, text):
    if not re.fullmatch(r"[0-9]{1,20}", text):
        raise ValueError(f"URI parameter {name}={text!r} is not a uint64")
    value = int(text)
    if value > U64_MAX:
        raise ValueError(f"URI parameter {name}={text!r} is not a uint64")
    return value


def decode_handle(text):
    """The segment name in a ``remote_handle`` (URL-safe base64)."""
    try:
        if not re.fullmatch(r"[A-Za-z0-9_\-]+={0,2}", text):
            raise ValueError("characters outside the URL-safe alphabet")
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        name = raw.decode("ascii")
    except (binascii.Error, ValueError, UnicodeError) as exc:
        raise ValueError(f"remote_handle={text!r} is not URL-safe base64 of an ASCII "
                         f"name ({exc})") from None
    if not _NAME_RE.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"remote_handle names {name!r}: not a shared-memory segment name "
                         f"(1-200 letters, digits, '_', '.', '-'; not '.' or '..')")
    return name


def _check_host(uri, netloc, host):
    """The host of ``uri``: an IP address (IPv6 bracketed, a zone as %25)
    or a DNS name of ASCII labels; ValueError otherwise."""
    if "@" in netloc:
        raise ValueError(f"URI {uri!r}: user information (user@host) is not allowed")
    if netloc.startswith("["):
        text = unquote(host, errors="strict")
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            raise ValueError(f"URI {uri!r}: bracketed host {host!r} is not an IPv6 "
                             f"address") from None
        return text
    if len(host) > 253 or not _HOSTNAME_RE.fullmatch(host):
        raise ValueError(f"URI {uri!r}: host {host!r} is not an IP address or a host name "
                         f"(ASCII letters, digits, '-', '_' in dot-separated labels)")
    return host


def parse_uri(uri, *, server=False):
    """Parse ``uri`` into an :class:`Endpoint`; ValueError names the bad part.

    A client's URI must have a port and ``want_data``; a server's may leave
    both out (port 0: any free port; the default tags).
    """
    if not isinstance(uri, str):
        raise TypeError(f"uri must be a str, not {type(uri).__name__}")
    bad = next((i for i, c in enumerate(uri) if not "!" <= c <= "~"), None)
    if bad is not None:
        # urlsplit drops tabs and newlines silently ("ex\tample" is "example")
        raise ValueError(f"URI {uri!r}: character {uri[bad]!r} at index {bad} (a URI is "
                         f"printable ASCII without spaces; percent-encode the rest)")
    try:
        parts = urlsplit(uri)
    except ValueError as exc:           # "Invalid IPv6 URL", an IPv4 host in brackets
        raise ValueError(f"URI {uri!r}: bad host or syntax ({exc})") from None
    if parts.scheme != "tcp":
        raise ValueError(f"URI {uri!r}: scheme must be 'tcp', not {parts.scheme!r}")
    if parts.path not in ("", "/") or parts.fragment:
        raise ValueError(f"URI {uri!r}: unexpected path or fragment")
    host = parts.hostname
    if not host:
        raise ValueError(f"URI {uri!r} has no host")
    host = _check_host(uri, parts.netloc, host)
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"URI {uri!r}: port is not a number in 0-65535") from None
    if port is None:
        if not server:
            raise ValueError(f"URI {uri!r} has no port")
        port = 0
    query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False)
    for key, values in query.items():
        if len(values) != 1:
            raise ValueError(f"URI {uri!r}: parameter {key!r} is given {len(values)} times")
    q = {k: v[0] for k, v in query.items()}
    for key in q:
        if key not in PARAMETERS:
            close = difflib.get_close_matches(key, PARAMETERS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"URI {uri!r}: unknown parameter {key!r} (known: "
                             f"{', '.join(PARAMETERS)}){hint}")
    if "want_data" not in q and not server:
        raise ValueError(f"URI {uri!r} has no want_data parameter (required)")
    want = _u64("want_data", q["want_data"]) if "want_data" in q else DEFAULT_WANT_DATA
    free = _u64("free_data", q["free_data"]) if "free_data" in q else None
    if free is not None and free == want:
        raise ValueError(f"URI {uri!r}: want_data and free_data are both {want}")
    segment = decode_handle(q["remote_handle"]) if "remote_handle" in q else None
    if segment is not None and free is None:
        raise ValueError(f"URI {uri!r}: remote_handle without free_data")
    return Endpoint(host, port, want, free, segment)
