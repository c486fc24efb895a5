"""The exceptions and warnings of pipec."""
from __future__ import annotations

from typing import List, NamedTuple, Optional

__all__ = ["Diagnostic", "Error", "SpecError", "DataError", "StateError", "GpuUnavailableError",
           "SpecWarning", "DeviceWarning"]


class Diagnostic(NamedTuple):
    """One diagnostic of a spec, as `pipec check` prints it."""

    file: str
    """The file as it was named (the spec, an imported file, or ``<command line>`` for a define)."""
    line: int
    """1-based; 0 when the diagnostic has no place in a file."""
    column: int
    """1-based, in bytes."""
    severity: str
    """``"error"``, ``"warning"`` or ``"note"``."""
    kind: str
    """The diagnostic's kind (docs/diagnostics.md), e.g. ``"type_mismatch"``."""
    message: str
    rendered: str
    """``file:line:col: error[kind]: message`` with the source line and a caret."""

    def __str__(self) -> str:
        return self.rendered.rstrip("\n")


class Error(Exception):
    """Base class of pipec's errors."""


class SpecError(Error):
    """The spec has errors: ``str(e)`` is every error as ``file:line:col: error[kind]: message`` with
    the source line, and ``e.diagnostics`` the same as :class:`Diagnostic` tuples."""

    def __init__(self, message: str, diagnostics: Optional[List[Diagnostic]] = None):
        super().__init__(message)
        self.diagnostics: List[Diagnostic] = list(diagnostics or [])

    @property
    def file(self) -> Optional[str]:
        """The file of the first error."""
        return self.diagnostics[0].file if self.diagnostics else None

    @property
    def line(self) -> Optional[int]:
        """The line of the first error."""
        return self.diagnostics[0].line if self.diagnostics else None

    @property
    def column(self) -> Optional[int]:
        """The column of the first error."""
        return self.diagnostics[0].column if self.diagnostics else None


class DataError(Error):
    """The pipeline failed on its data: a corrupt or missing file, a value a map cannot handle.

    ``str(e)`` names the stage and its place in the spec, then the file, record and byte offset when
    the problem is in an input file, e.g. ``chess.pipe:9:1: tfrecord: data/x.tfrecord: record 3 at
    byte offset 1042: data CRC mismatch (corrupt record)``. The parts are attributes (None when
    unknown). The pipeline stops: iterating it again ends at once.
    """

    def __init__(self, message: str, *, stage: Optional[str] = None, spec_location: Optional[str] = None,
                 file: Optional[str] = None, record: Optional[int] = None, offset: Optional[int] = None):
        super().__init__(message)
        self.stage = stage
        """The stage's operation (``"tfrecord"``, ``"map"``, ...)."""
        self.spec_location = spec_location
        """Where the stage is written: ``"chess.pipe:9:1"``."""
        self.file = file
        """The input file."""
        self.record = record
        """The record's index in the file (0-based)."""
        self.offset = offset
        """The byte offset in the file."""


class StateError(Error, ValueError):
    """A state given to ``Spec.pipeline(state=...)`` belongs to another pipeline, seed or shard, or is
    damaged; nothing was changed."""


class GpuUnavailableError(Error):
    """``device="gpu"`` and there is no usable GPU."""


class SpecWarning(UserWarning):
    """A warning of the spec's check (an unused declaration, shadowing)."""


class DeviceWarning(UserWarning):
    """The maps after ``to(gpu)`` run on the CPU, because there is no usable GPU (``device="auto"``)."""
