"""What the watchdog does with the code (its one definition: the workspace's and the course's
stored mode take these values, ``live.watchdog`` acts on them; docs/guard.md)."""

from __future__ import annotations

from enum import StrEnum


class GuardMode(StrEnum):
    """``off``: no scan; ``flag``: mark every finding; ``halt`` (the default): also stop the
    model's stream at a high-severity finding and have it fix it."""

    OFF = "off"
    FLAG = "flag"
    HALT = "halt"

    @classmethod
    def parse(cls, value: object) -> GuardMode:
        """A stored mode; anything unknown is the safe default (halt)."""
        try:
            return cls(str(value))
        except ValueError:
            return cls.HALT

    @classmethod
    def known(cls, value: object) -> bool:
        """Whether ``value`` names a mode (a form's input is checked with this)."""
        return value in cls._value2member_map_

    @property
    def label(self) -> str:
        """The mode in a few words, for a choice in a form."""
        return _LABELS[self]


_LABELS = {
    GuardMode.OFF: "off",
    GuardMode.FLAG: "flag findings",
    GuardMode.HALT: "halt and correct high-severity findings",
}
