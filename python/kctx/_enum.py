"""The package's enum base: an IntEnum that prints its name."""
from __future__ import annotations

import enum


class NamedIntEnum(enum.IntEnum):
    """An IntEnum whose str() and format() give its name (``BUSY``), not its
    number, on every Python version; repr() stays ``<Status.BUSY: 4>``."""

    def __str__(self) -> str:
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)
