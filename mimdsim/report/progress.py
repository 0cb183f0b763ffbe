"""Progress on stderr for simulate, compare, sweeps and training: one mechanism, tqdm's bar
(``pip install "mimdsim[progress]"``); without tqdm, a plain line of the count every few seconds
once a run has taken ``delay`` seconds, and notes still print.

``Progress(label, unit)`` is the ``progress(done, total)`` callback of :func:`mimdsim.simulate`,
:func:`mimdsim.compare` and the sweep runner, and training's per-epoch bar (``start``, ``step``,
``close``). The bar appears only after ``delay`` seconds (a quick run stays silent) and is redrawn
at most every ``every`` seconds; on a log file or CI each redraw is a line, so a long run is never
silent. ``note(text)`` prints a one-off line at once (e.g. "starting a Dask cluster") without
breaking the bar; ``stage(text)`` says what an uncounted stage does (tracing, costing the GPU columns)
once the run has taken ``delay`` seconds.
"""
from __future__ import annotations

import math
import sys
import time

PROGRESS_HINT = 'progress bars need tqdm: pip install "mimdsim[progress]"'


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def wanted(progress) -> bool:
    """``progress=None`` means: show a bar only when stdout is a terminal (training's default)."""
    if progress is None:
        return bool(getattr(sys.stdout, "isatty", lambda: False)())
    return bool(progress)


class Progress:
    def __init__(self, label: str, unit: str = "step", *, stream=None, delay: float = 2.0, every: float = 2.0,
                 enabled: bool = True, leave: bool = True):
        self.label, self.unit, self.delay, self.every, self.leave = label, unit, delay, every, leave
        self.stream = stream if stream is not None else sys.stderr
        self.tqdm = _tqdm()
        self.enabled = enabled
        self.bar = None
        self.started = time.monotonic()
        self._printed = -math.inf  # the plain fallback's last line (no tqdm)

    def _plain(self, text: str) -> None:
        """Without tqdm: a line now and then once the run has taken ``delay`` seconds."""
        now = time.monotonic()
        if now - self.started < self.delay or now - self._printed < self.every:
            return
        self._printed = now
        try:
            self.stream.write(f"{self.label}: {text}\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def stage(self, text: str) -> None:
        """What the run does now, where it has no count (tracing a step, costing the GPU columns): shown
        once the run has taken ``delay`` seconds, as the bar's status or a line."""
        if not self.enabled:
            return
        if self.bar is not None:
            try:
                self.bar.set_postfix_str(text, refresh=True)
            except (OSError, ValueError):
                self.enabled = False
        elif time.monotonic() - self.started >= self.delay:
            self.note(text)

    def _open(self, total, desc=None):
        self.bar = self.tqdm(total=total, desc=desc or self.label, unit=self.unit, file=self.stream,
                             delay=self.delay, mininterval=self.every, dynamic_ncols=True, leave=self.leave)

    def __call__(self, done, total) -> None:
        """``done`` of ``total`` units finished (the simulate/sweep callback)."""
        if not self.enabled:
            return
        if self.tqdm is None:
            self._plain(f"{done}/{total} {self.unit}")
            return
        try:
            if self.bar is None:
                self._open(total)
            elif self.bar.total != total:
                self.bar.total = total
            self.bar.update(done - self.bar.n)
        except (OSError, ValueError):  # stderr closed: progress is optional, the run is not
            self.enabled = False

    def start(self, total, desc) -> None:
        """A new bar of ``total`` units titled ``desc`` (training: one per epoch)."""
        self.close()
        if self.enabled and self.tqdm is not None:
            self._open(total, desc)

    def step(self, postfix: str = "") -> None:
        """One unit more, with a short status after the bar (training: the running loss)."""
        if self.bar is not None:
            if postfix:
                self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.update(1)

    def note(self, text: str) -> None:
        """A one-off line now, above the bar."""
        if not self.enabled:
            return
        try:
            line = f"{self.label}: {text}"
            if self.tqdm is not None:
                self.tqdm.write(line, file=self.stream)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def close(self) -> None:
        """Finish the bar (kept on screen with its final count when ``leave``)."""
        if self.bar is not None:
            try:
                self.bar.close()
            except (OSError, ValueError):
                pass
            self.bar = None
