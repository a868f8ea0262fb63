"""The one progress line every command draws on stderr."""

from __future__ import annotations

import sys
import time
from typing import TextIO, Union


class Progress:
    """A status line on ``stream`` (stderr by default): redrawn in place on a terminal, a
    line per update elsewhere; shown only once ``delay`` seconds have passed, redrawn at
    most 10 times a second. ``enabled=False`` (or ``stream=None``) draws nothing.

    Two ways to feed it: ``update(stage, done, total, unit)`` draws a bar for a stage of
    known size; ``step(what)`` counts one of ``total`` steps and names it.

    >>> bar = Progress("zorder sort", stream=None)
    >>> bar.update("reading", 1, 2, "row groups"); bar.close()
    """

    def __init__(self, label: str, stream: Union[TextIO, None, str] = "stderr", *,
                 total: int = 0, delay: float = 0.0, enabled: bool = True,
                 width: int = 30) -> None:
        if stream == "stderr":  # looked up now, so a redirected stderr is the one used
            stream = sys.stderr
        assert not isinstance(stream, str)
        self.label = label
        self.stream = stream if enabled else None
        self.total = total
        self.done = 0
        self.delay = delay
        self.width = width
        self._start = time.monotonic()
        self._last = 0.0
        self._shown = False
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def _draw(self, text: str, force: bool, final: bool) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        if now - self._start < self.delay:
            return
        if not force and not final and now - self._last < 0.1:
            return
        self._last = now
        if self._tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._shown = True

    def update(self, stage: str, done: int, total: int, unit: str, force: bool = False) -> None:
        """Show ``stage`` at ``done`` of ``total`` ``unit``s as a bar."""
        frac = done / total if total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        self._draw(f"{self.label}: {stage:<9} [{bar}] {frac:4.0%} {done}/{total} {unit}",
                   force, done >= total)

    def step(self, what: str) -> None:
        """Count one more of ``total`` steps, about to do ``what``."""
        self.done += 1
        self._draw(f"{self.label}: [{self.done}/{self.total}] {what}", True, False)

    def close(self) -> None:
        """End the line (on a terminal), so later output starts on a fresh one."""
        if self.stream is not None and self._shown and self._tty:
            self.stream.write("\n")
            self.stream.flush()
        self._shown = False
