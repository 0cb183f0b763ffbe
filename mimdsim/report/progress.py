"""Progress on stderr, with no optional package: a plain line for any run longer than a moment.

``Progress(label, unit)`` is the ``progress(done, total)`` callback of :func:`mimdsim.simulate`,
:func:`mimdsim.compare` and the sweep runner. Nothing is printed during the first ``delay``
seconds (a quick run stays silent); after that one line at most every ``every`` seconds: on a
terminal it is redrawn in place (``\\r``), elsewhere (a log file, CI) it is a new line each time,
so a long run is never silent. ``note(text)`` prints a one-off line at once (e.g. "starting a
Dask cluster"), which a slow step that has no count yet can use.
"""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, unit: str = "step", *, stream=None, delay: float = 2.0, every: float = 2.0,
                 enabled: bool = True):
        self.label, self.unit, self.delay, self.every, self.enabled = label, unit, delay, every, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.last = None  # when the last line was drawn
        self.done = self.total = 0
        self.drawn = False  # a \r line is open on the terminal
        self.first = None  # (time, done) of the first report: the rate excludes the set-up before it
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, done, total) -> None:
        self.done, self.total = done, total
        if not self.enabled:
            return
        now = time.monotonic()
        if self.first is None:
            self.first = (now, done)
        if now - self.start < self.delay or (self.last is not None and now - self.last < self.every
                                             and done < total):
            return
        self.last = now
        self._draw(now)

    def _line(self, now) -> str:
        elapsed = now - self.start
        line = f"{self.label}: {self.done:,}/{self.total:,} {self.unit}s, {elapsed:,.0f} s"
        if self.first is not None and self.first[1] < self.done < self.total and now > self.first[0]:
            rate = (self.done - self.first[1]) / (now - self.first[0])
            line += f", about {(self.total - self.done) / rate:,.0f} s left"
        return line

    def _draw(self, now) -> None:
        try:
            if self.tty:
                self.stream.write("\r" + self._line(now).ljust(70))
                self.drawn = True
            else:
                self.stream.write(self._line(now) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is optional, the run is not
            self.enabled = False

    def note(self, text: str) -> None:
        """A one-off line now (ends an open progress line first)."""
        if not self.enabled:
            return
        try:
            self.stream.write(("\n" if self.drawn else "") + f"{self.label}: {text}\n")
            self.stream.flush()
            self.drawn = False
        except (OSError, ValueError):
            self.enabled = False

    def close(self) -> None:
        """End the line (a terminal's \\r line gets its final count)."""
        if self.enabled and self.drawn:
            try:
                self.stream.write("\r" + self._line(time.monotonic()).ljust(70) + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self.drawn = False
