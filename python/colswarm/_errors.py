"""Exceptions raised by colswarm (defined in Python so that they can be both ValueError and OSError)."""

from __future__ import annotations

from typing import Optional


class ColswarmError(ValueError):
    """Any error colswarm reports: a malformed table, model or argument.

    The message is the Rust error's, which names the file and, where it applies, the line and
    the column index. The same facts are attributes, ``None`` where they do not apply:

    - ``path``: the file (or model directory) concerned,
    - ``line``: the line of the file (1-based) where the faulty record starts,
    - ``column``: the column index (0-based) of the faulty cell.
    """

    path: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None


class ColswarmIOError(ColswarmError, OSError):
    """A file or directory could not be read (also an ``OSError``)."""


class ColswarmFileNotFoundError(ColswarmIOError, FileNotFoundError):
    """A table file or model directory does not exist (also a ``FileNotFoundError``)."""
