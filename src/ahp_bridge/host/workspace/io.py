"""Blocking file reads for the workspace: confinement, resolve, list, read. Run in worker threads.

Every function here may block on the disk, so the trio side (`host/workspace.py`) calls them
through `trio.to_thread.run_sync`; none touches trio. Each takes the *candidate* roots (paths
as sessions and settings name them), resolves them and the requested path with
`os.path.realpath` in the same thread, and decides with `workspace_paths.within_any`: a path is
served only when its real location is inside a real root, so `..` and symlinks that lead out
are refused alike. Reads also check, after opening, where the open descriptor really points
(`/proc/self/fd`), which closes the gap between the check and the open.

Errors are `RpcError`s with the AHP codes (-32008 NotFound, -32009 PermissionDenied, -32010
AlreadyExists) and messages that name the URI the client sent, never a path it did not.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

from ahp_bridge.host.workspace.paths import (
    SNIFF_BYTES,
    UriRefused,
    content_type,
    looks_binary,
    path_of_uri,
    uri_of_path,
    within_any,
)
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError

__all__ = [
    "READ_FLAGS",
    "ROOTS_HINT",
    "Target",
    "check_open_fd",
    "confine",
    "confine_entry",
    "etag",
    "fd_path",
    "list_directory",
    "os_error",
    "os_errors",
    "read_all",
    "read_file",
    "real_roots",
    "resolve",
    "text_of",
]

#: Where the served directories come from, for refusals.
ROOTS_HINT = "a session's working directories, the default directory and workspace.roots"

#: Non-blocking so a FIFO cannot hang the thread; no-follow so the last component that was
#: checked cannot be swapped for a symlink before the open.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW


@dataclass(frozen=True)
class Target:
    """A requested URI that passed confinement."""

    uri: str
    #: The path as requested, normalised (`..` folded), symlinks not resolved.
    path: str
    #: Where it really is (symlinks resolved; for `confine_entry`, all but the last component).
    real: str
    #: The real root that holds `real`.
    root: str


def real_roots(candidates: Iterable[str]) -> list[str]:
    """The real paths of the candidate roots that exist and are directories (deduplicated)."""
    roots: list[str] = []
    for candidate in dict.fromkeys(candidates):
        try:
            real = os.path.realpath(candidate, strict=True)
        except (OSError, ValueError):
            continue
        if os.path.isdir(real) and real not in roots:
            roots.append(real)
    return roots


def _parse(uri: str) -> str:
    try:
        return path_of_uri(uri)
    except UriRefused as exc:
        raise RpcError(E.INVALID_PARAMS, f"Invalid params: uri: {exc}") from None


def _outside(uri: str, path: str, roots: list[str]) -> NoReturn:
    # The lexical path inside a root but the real one outside: a symlink led out.
    how = " through a symlink" if within_any(path, roots) is not None else ""
    raise RpcError(
        E.PERMISSION_DENIED,
        f"Permission denied: {uri} leads outside the directories this host serves{how} "
        f"({ROOTS_HINT})",
    )


def confine(uri: str, roots: list[str]) -> Target:
    """Resolve `uri` following every symlink; refuse it unless it lands inside a root."""
    path = _parse(uri)
    real = os.path.realpath(path)
    root = within_any(real, roots)
    if root is None:
        _outside(uri, path, roots)
    return Target(uri, path, real, root)


def confine_entry(uri: str, roots: list[str]) -> Target:
    """Resolve `uri`'s parent but not its last component: the entry itself (a symlink stays a
    symlink), for lstat, delete and move. The entry must sit in a directory inside a root."""
    path = _parse(uri)
    if path == "/":
        return confine(uri, roots)
    real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    root = within_any(real, roots)
    if root is None:
        _outside(uri, path, roots)
    return Target(uri, path, real, root)


def os_error(exc: OSError, uri: str, verb: str) -> RpcError:
    """An OSError from a file operation as the AHP error a client can act on."""
    if isinstance(exc, FileNotFoundError):
        return RpcError(E.NOT_FOUND, f"Not found: {uri}")
    if isinstance(exc, FileExistsError):
        return RpcError(E.ALREADY_EXISTS, f"Already exists: {uri}")
    if isinstance(exc, PermissionError):
        return RpcError(E.PERMISSION_DENIED, f"Permission denied: the bridge may not {verb} {uri}")
    if isinstance(exc, IsADirectoryError):
        return RpcError(E.INVALID_PARAMS, f"Invalid params: uri: {uri} is a directory")
    if isinstance(exc, NotADirectoryError):
        return RpcError(E.NOT_FOUND, f"Not found: {uri} (a parent is not a directory)")
    if exc.errno == errno.ELOOP:
        return RpcError(E.INVALID_PARAMS, f"Invalid params: uri: {uri} is a symlink loop")
    return RpcError(E.INTERNAL_ERROR, f"Could not {verb} {uri}: {exc.strerror or exc}")


@contextlib.contextmanager
def os_errors(uri: str, verb: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise os_error(exc, uri, verb) from None


def etag(st: os.stat_result) -> str:
    """An opaque version of a file: changes whenever its content is replaced or modified."""
    return f"{st.st_mtime_ns:x}-{st.st_size:x}-{st.st_ino:x}"


def _iso(ns: int) -> str:
    stamp = datetime.fromtimestamp(ns / 1e9, tz=UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def fd_path(fd: int) -> str | None:
    """Where an open descriptor really points, or None where /proc does not say (not Linux)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def check_open_fd(fd: int, target: Target, roots: list[str]) -> None:
    """After open: the descriptor must still be inside a root (a symlink swapped in between the
    check and the open would show here). Only where /proc exposes it (Linux)."""
    opened = fd_path(fd)
    if opened is not None and within_any(opened, roots) is None:
        _outside(target.uri, target.path, roots)


def _sniff(fd: int) -> bytes:
    return os.pread(fd, SNIFF_BYTES, 0)


def resolve(uri: str, roots: list[str], follow_symlinks: bool = True) -> dict[str, Any]:
    """`resourceResolve`: stat (or lstat) + realpath, inside the roots only."""
    target = confine(uri, roots) if follow_symlinks else confine_entry(uri, roots)
    with os_errors(uri, "resolve"):
        st = os.stat(target.real) if follow_symlinks else os.lstat(target.real)
    result: dict[str, Any] = {
        "uri": uri_of_path(target.real) if follow_symlinks else uri,
        "mtime": _iso(st.st_mtime_ns),
    }
    birth = getattr(st, "st_birthtime", None)  # creation time, where the OS records it
    if isinstance(birth, int | float) and birth > 0:
        result["ctime"] = _iso(int(birth * 1e9))
    if stat.S_ISLNK(st.st_mode):
        result["type"] = "symlink"
    elif stat.S_ISDIR(st.st_mode):
        result["type"] = "directory"
    else:
        result["type"] = "file"
        result["size"] = st.st_size
        result["etag"] = etag(st)
        binary: bool | None = None
        if stat.S_ISREG(st.st_mode):
            with contextlib.suppress(OSError):
                fd = os.open(target.real, READ_FLAGS)
                try:
                    binary = looks_binary(_sniff(fd))
                finally:
                    os.close(fd)
        result["contentType"] = content_type(target.real, binary=binary)
    return result


def list_directory(uri: str, roots: list[str], max_entries: int) -> dict[str, Any]:
    """`resourceList`: the entries of a directory inside the roots.

    Symlinks are listed as what they point to when that is inside the roots, and left out when
    it is outside or broken (listing them would say what lies outside); sockets, FIFOs and
    devices are left out (DirectoryEntry is a file or a directory).
    """
    target = confine(uri, roots)
    entries: list[dict[str, str]] = []
    with os_errors(uri, "list"):
        if not os.path.isdir(target.real):
            if not os.path.exists(target.real):
                raise RpcError(E.NOT_FOUND, f"Not found: {uri}")
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: uri: {uri} is not a directory")
        with os.scandir(target.real) as scan:
            for seen, entry in enumerate(scan, start=1):
                if seen > max_entries:
                    raise RpcError(
                        E.PERMISSION_DENIED,
                        f"Permission denied: {uri} has more than {max_entries} entries, the "
                        "most resourceList returns (workspace.max_list_entries)",
                    )
                kind = _entry_kind(entry, roots)
                if kind is not None:
                    entries.append({"name": entry.name, "type": kind})
    entries.sort(key=lambda e: e["name"])
    return {"entries": entries}


def _entry_kind(entry: os.DirEntry[str], roots: list[str]) -> str | None:
    try:
        if entry.is_symlink():
            real = os.path.realpath(entry.path)
            if within_any(real, roots) is None:
                return None
            if os.path.isdir(real):
                return "directory"
            return "file" if os.path.isfile(real) else None
        if entry.is_dir(follow_symlinks=False):
            return "directory"
        if entry.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        return None
    return None


def read_file(uri: str, roots: list[str], encoding: str | None, max_bytes: int) -> dict[str, Any]:
    """`resourceRead`: a regular file inside the roots, at most `max_bytes`.

    Text (UTF-8 without NUL) goes as `utf-8` unless the client asks for base64; anything else
    goes as `base64`, whatever was asked (the spec: binary content MUST be base64, and a host
    that cannot honour the requested encoding falls back to base64 or utf-8).
    """
    target = confine(uri, roots)
    with os_errors(uri, "read"):
        fd = os.open(target.real, READ_FLAGS)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise RpcError(
                    E.INVALID_PARAMS,
                    f"Invalid params: uri: {uri} is a directory; list it with resourceList",
                )
            if not stat.S_ISREG(st.st_mode):
                raise RpcError(
                    E.PERMISSION_DENIED, f"Permission denied: {uri} is not a regular file"
                )
            check_open_fd(fd, target, roots)
            if st.st_size > max_bytes:
                _too_large(uri, st.st_size, max_bytes)
            data = read_all(fd, max_bytes + 1)
            if len(data) > max_bytes:  # it grew while we read
                _too_large(uri, len(data), max_bytes)
        finally:
            os.close(fd)
    text = text_of(data)
    kind = content_type(target.real, binary=text is None)
    if text is not None and encoding != "base64":
        return {"data": text, "encoding": "utf-8", "contentType": kind}
    encoded = base64.b64encode(data).decode("ascii")
    return {"data": encoded, "encoding": "base64", "contentType": kind}


def text_of(data: bytes) -> str | None:
    """The content as text when it is UTF-8 without NUL bytes; else None (binary)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _too_large(uri: str, size: int, max_bytes: int) -> NoReturn:
    raise RpcError(
        E.PERMISSION_DENIED,
        f"Permission denied: {uri} is {size} bytes, more than the {max_bytes} bytes resourceRead "
        "serves; raise workspace.max_read_bytes to read it",
    )


def read_all(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
