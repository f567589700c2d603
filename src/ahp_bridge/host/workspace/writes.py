"""Blocking file changes for the workspace: write, mkdir, move, copy, delete. Run in worker threads.

They are reached only when `workspace.allow_writes` is on (the trio side refuses otherwise), and
every path goes through the same confinement as reads (`workspace_io.confine`): a destination
whose real parent is outside the roots is refused, symlinks are never followed out, and a root
itself can be neither deleted nor moved. Writes take an exclusive `flock` so the spec's
`append` and `insert` stay atomic against other writers that lock (the spec asks that
concurrent appends never overwrite each other).
"""

from __future__ import annotations

import base64
import binascii
import errno
import fcntl
import os
import shutil
import stat
from typing import NoReturn

from ahp_bridge.host.workspace.io import (
    Target,
    check_open_fd,
    confine,
    confine_entry,
    etag,
    os_errors,
)
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError

__all__ = ["CONFLICT", "copy", "decode_data", "delete", "mkdir", "move", "write"]

#: AHP `Conflict` (`resourceWrite` with a stale `ifMatch`). 0.7.0's ResourceWriteParams already
#: requires it, but only 1.0.0's AhpErrorCode lists the number.
CONFLICT = E.CONFLICT

_WRITE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def decode_data(data: str, encoding: str) -> bytes:
    """The bytes of `resourceWrite.data` in its declared encoding."""
    if encoding == "utf-8":
        return data.encode("utf-8")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise RpcError(E.INVALID_PARAMS, "Invalid params: data: not valid base64") from None


def _parent_must_exist(target: Target) -> None:
    if not os.path.isdir(os.path.dirname(target.real)):
        raise RpcError(
            E.NOT_FOUND,
            f"Not found: the parent directory of {target.uri}; create it with resourceMkdir",
        )


def _not_a_root(target: Target, verb: str) -> None:
    if os.path.realpath(target.real) == target.root:
        raise RpcError(
            E.PERMISSION_DENIED,
            f"Permission denied: {target.uri} is a directory this host serves; it cannot be {verb}",
        )


def write(
    uri: str,
    roots: list[str],
    data: bytes,
    *,
    create_only: bool,
    mode: str,
    position: int,
    if_match: str | None,
    max_shift: int,
) -> None:
    """`resourceWrite` in its three modes (see ResourceWriteMode): truncate at `position` and
    write; append `position` bytes before EOF; insert at `position`. `max_shift` bounds the
    bytes an append-before-EOF or an insert must move (they are read into memory)."""
    target = confine(uri, roots)
    if position < 0:
        raise RpcError(E.INVALID_PARAMS, "Invalid params: position: must not be negative")
    _parent_must_exist(target)
    flags = _WRITE_FLAGS | (os.O_EXCL if create_only else 0)
    with os_errors(uri, "write"):
        # The file is opened (maybe created) relative to its parent, opened and checked first
        # (O_NOFOLLOW keeps it in there): a parent swapped for a symlink after `confine` can
        # neither get a file written outside nor one created there.
        parent = os.open(os.path.dirname(target.real), _DIR_FLAGS)
        try:
            check_open_fd(parent, target, roots)
            fd = os.open(os.path.basename(target.real), flags, 0o666, dir_fd=parent)
        finally:
            os.close(parent)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise RpcError(
                    E.PERMISSION_DENIED, f"Permission denied: {uri} is not a regular file"
                )
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            if if_match is not None and etag(st) != if_match:
                raise RpcError(
                    CONFLICT,
                    f"Conflict: {uri} changed since etag {if_match!r}; resolve it again",
                )
            size = st.st_size
            if mode == "truncate":
                os.ftruncate(fd, position)
                _pwrite_all(fd, data, position)
            elif mode == "append":
                if position > size:
                    _bad_position(uri, f"{position} bytes before the end", size)
                _shifted_write(fd, data, size - position, size, uri, max_shift)
            elif mode == "insert":
                if position > size:
                    _bad_position(uri, f"offset {position}", size)
                _shifted_write(fd, data, position, size, uri, max_shift)
            else:
                raise RpcError(E.INVALID_PARAMS, f"Invalid params: mode: unknown mode {mode!r}")
        finally:
            os.close(fd)


def _bad_position(uri: str, where: str, size: int) -> NoReturn:
    raise RpcError(
        E.INVALID_PARAMS, f"Invalid params: position: {where} is outside {uri} ({size} bytes)"
    )


def _shifted_write(fd: int, data: bytes, at: int, size: int, uri: str, max_shift: int) -> None:
    moved = size - at
    if moved > max_shift:
        raise RpcError(
            E.PERMISSION_DENIED,
            f"Permission denied: writing there would move {moved} bytes of {uri}, more than "
            f"workspace.max_read_bytes ({max_shift}) allows",
        )
    tail = os.pread(fd, moved, at) if moved else b""
    _pwrite_all(fd, data + tail, at)


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def mkdir(uri: str, roots: list[str]) -> None:
    """`resourceMkdir`: `mkdir -p`; an existing directory is success, anything else there is
    AlreadyExists."""
    target = confine(uri, roots)
    if os.path.lexists(target.real) and not os.path.isdir(target.real):
        raise RpcError(E.ALREADY_EXISTS, f"Already exists: {uri} is not a directory")
    with os_errors(uri, "create"):
        os.makedirs(target.real, exist_ok=True)


def delete(uri: str, roots: list[str], *, recursive: bool) -> None:
    """`resourceDelete`: a file or symlink (never its target), or a directory (recursive, or
    empty)."""
    target = confine_entry(uri, roots)
    _not_a_root(target, "deleted")
    with os_errors(uri, "delete"):
        st = os.lstat(target.real)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(target.real)
        elif recursive:
            shutil.rmtree(target.real)
        else:
            try:
                os.rmdir(target.real)
            except OSError as exc:
                if exc.errno == errno.ENOTEMPTY:
                    raise RpcError(
                        E.INVALID_PARAMS,
                        f"Invalid params: recursive: {uri} is not empty; pass recursive: true "
                        "to delete it with its contents",
                    ) from None
                raise


def _clear_destination(dest: Target, fail_if_exists: bool) -> None:
    if not os.path.lexists(dest.real):
        return
    if fail_if_exists:
        raise RpcError(E.ALREADY_EXISTS, f"Already exists: {dest.uri}")
    _not_a_root(dest, "overwritten")
    if os.path.isdir(dest.real) and not os.path.islink(dest.real):
        shutil.rmtree(dest.real)
    else:
        os.unlink(dest.real)


def _not_into_itself(source: Target, dest: Target, verb: str) -> None:
    src = os.path.realpath(source.real)
    if dest.real == src or dest.real.startswith(src.rstrip("/") + "/"):
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: destination: cannot {verb} {source.uri} into itself",
        )


def move(source: str, destination: str, roots: list[str], *, fail_if_exists: bool) -> None:
    """`resourceMove`: rename inside the roots; an existing destination is replaced unless
    `fail_if_exists`."""
    src = confine_entry(source, roots)
    dest = confine_entry(destination, roots)
    _not_a_root(src, "moved")
    with os_errors(source, "move"):
        os.lstat(src.real)
    _not_into_itself(src, dest, "move")
    _parent_must_exist(dest)
    with os_errors(destination, "move to"):
        _clear_destination(dest, fail_if_exists)
        try:
            os.rename(src.real, dest.real)
        except OSError as exc:
            if exc.errno != errno.EXDEV:  # another filesystem
                raise
            shutil.move(src.real, dest.real)


def copy(source: str, destination: str, roots: list[str], *, fail_if_exists: bool) -> None:
    """`resourceCopy`: a file (its content, with a symlink followed only inside the roots) or a
    directory tree (symlinks inside copied as symlinks, so nothing outside is read)."""
    src = confine(source, roots)
    dest = confine_entry(destination, roots)
    with os_errors(source, "copy"):
        st = os.stat(src.real)
    _not_into_itself(src, dest, "copy")
    _parent_must_exist(dest)
    with os_errors(destination, "copy to"):
        _clear_destination(dest, fail_if_exists)
        if stat.S_ISDIR(st.st_mode):
            shutil.copytree(src.real, dest.real, symlinks=True)
        else:
            shutil.copy2(src.real, dest.real)
