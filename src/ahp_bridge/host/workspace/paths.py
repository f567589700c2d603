"""Pure decisions about workspace paths: which URIs name a local file, and which paths stay inside.

No I/O here: the callers resolve symlinks (`os.path.realpath`, off the trio thread) and hand in
the real paths; these functions only decide. Keeping the decisions pure lets the unit tests try
every shape of hostile URI (other schemes, remote hosts, `..`, NUL bytes, encoded slashes)
without a filesystem, and keeps one definition of "inside" for reads, writes, watches and
mentions.
"""

from __future__ import annotations

import functools
import mimetypes
import posixpath
from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urlsplit

__all__ = [
    "UriRefused",
    "content_type",
    "is_within",
    "looks_binary",
    "path_of_uri",
    "root_path",
    "uri_of_path",
    "within_any",
]

#: How many leading bytes decide whether a file is text (as git and most editors do).
SNIFF_BYTES = 8192

#: Textual types `mimetypes` knows under `application/`; anything else textual is text/plain.
_TEXTUAL_APPLICATION = frozenset(
    {
        "application/json",
        "application/javascript",
        "application/xml",
        "application/toml",
        "application/x-sh",
        "application/x-yaml",
        "application/yaml",
        "application/sql",
        "application/x-httpd-php",
        "application/ld+json",
        "application/xhtml+xml",
    }
)


#: Types Python's built-in table lacks (in 3.11) for files a coding agent meets every day.
_EXTRA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".cjs": "text/javascript",
    ".ts": "text/x-typescript",
    ".tsx": "text/x-typescript",
    ".sh": "text/x-sh",
    ".rs": "text/x-rust",
    ".go": "text/x-go",
    ".webp": "image/webp",
}


@functools.cache
def _types() -> mimetypes.MimeTypes:
    """Python's built-in table only: the system's mime.types differs between machines (one
    calls `x.ts` a Qt translation, another `x.rs` an XML service list)."""
    types = mimetypes.MimeTypes()
    for ext, kind in _EXTRA_TYPES.items():
        types.add_type(kind, ext, strict=False)
    return types


class UriRefused(ValueError):
    """A URI this host does not serve as a local file; the message says why, for the client."""


def path_of_uri(uri: str) -> str:
    """The absolute, normalised local path a `file:` URI names.

    Refuses other schemes, a host other than empty or `localhost`, relative paths, NUL bytes
    and percent-encoded slashes (which would let a segment hide a separator). `..` segments are
    folded here; whether the result is still inside a root is for `within_any` to decide on
    the *real* path, since `..` after a symlink means something else on disk.
    """
    if not isinstance(uri, str) or not uri:
        raise UriRefused("expected a file: URI")
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        scheme = parts.scheme or "no scheme"
        raise UriRefused(f"only file: URIs are served by this host (got {scheme})")
    if parts.netloc not in ("", "localhost"):
        raise UriRefused(f"file URIs must name this host, not {parts.netloc!r}")
    if parts.query or parts.fragment:
        raise UriRefused("file URIs take no query or fragment")
    raw = parts.path
    if "%2f" in raw.lower() or "%00" in raw:
        raise UriRefused("file URIs may not encode '/' or NUL in a path segment")
    path = unquote(raw)
    if "\x00" in path:
        raise UriRefused("file URIs may not contain NUL")
    if not path.startswith("/"):
        raise UriRefused("file URIs must carry an absolute path")
    return posixpath.normpath(path) if path != "/" else "/"


def root_path(directory: str) -> str:
    """A working directory as sessions record it (a `file:` URI or a plain path) -> a path."""
    if directory.startswith("/"):
        return posixpath.normpath(directory)
    return path_of_uri(directory)


def uri_of_path(path: str) -> str:
    """The `file:` URI of an absolute local path (`file:///a%20b`), the inverse of `path_of_uri`."""
    return "file://" + quote(path, safe="/-._~!$&'()*+,;=:@")


def directory_uri(path: str) -> str:
    """A working directory for the wire: an absolute path's `file:` URI, anything else as is."""
    return uri_of_path(path) if path.startswith("/") else path


def directory_path(uri: str) -> str:
    """A working directory as a filesystem path: a `file:` URI's path, anything else as is
    (a plain path; what a provider makes of anything else is its business)."""
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme == "file" else uri


def is_within(path: str, root: str) -> bool:
    """True when `path` is `root` or below it. Both must be real (symlink-free) and normalised."""
    if path == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return path.startswith(prefix)


def within_any(path: str, roots: Iterable[str]) -> str | None:
    """The innermost real root that holds `path`, or None when it is outside all of them."""
    best: str | None = None
    for root in roots:
        if is_within(path, root) and (best is None or len(root) > len(best)):
            best = root
    return best


def looks_binary(sample: bytes) -> bool:
    """Whether the first bytes of a file say "binary": a NUL, or not UTF-8 (allowing a cut-off
    multi-byte character at the end of a sample)."""
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A sample cut inside a multi-byte character is still text.
        return not (exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data")
    return False


def content_type(name: str, *, binary: bool | None) -> str:
    """The MIME type to report for a file called `name` whose content is (not) binary.

    The name decides only where it agrees with the content: a `.txt` full of NUL bytes is
    not text/plain. `binary=None` (not sniffed) trusts the name.
    """
    guessed, _ = _types().guess_type(PurePosixPath(name).name, strict=False)
    textual = guessed is not None and (
        guessed.startswith("text/") or guessed in _TEXTUAL_APPLICATION or guessed.endswith("+xml")
    )
    if binary is None:
        return guessed or "application/octet-stream"
    if binary:
        return guessed if guessed is not None and not textual else "application/octet-stream"
    return guessed if textual and guessed is not None else "text/plain"
