"""A progress bar for training: tqdm when installed (``pip install 'mimdsim[progress]'``), else a
plain one-line text bar; silent when disabled or, by default, when stdout is not a terminal."""
from __future__ import annotations

import sys
import time


def wanted(progress) -> bool:
    """``progress=None`` means: show a bar only when stdout is a terminal."""
    if progress is None:
        return bool(getattr(sys.stdout, "isatty", lambda: False)())
    return bool(progress)


class _TextBar:
    """The fallback when tqdm is missing: ``desc [#####-----] 12/45 loss 0.41`` on stderr."""

    def __init__(self, total, desc, stream):
        self.total, self.desc, self.n, self.stream = total, desc, 0, stream
        self.postfix = ""
        self.last = 0.0

    def update(self, n=1):
        self.n += n
        now = time.monotonic()
        if now - self.last > 0.2 or self.n >= self.total:
            self.last = now
            width = 24
            done = int(width * self.n / max(1, self.total))
            self.stream.write(f"\r{self.desc} [{'#' * done}{'-' * (width - done)}] {self.n}/{self.total} "
                              f"{self.postfix}")
            self.stream.flush()

    def set_postfix_str(self, text):
        self.postfix = text

    def write(self, text):
        self.stream.write("\r\033[K" + text + "\n")

    def close(self):
        self.stream.write("\r\033[K")
        self.stream.flush()


class Progress:
    """One bar per epoch; ``write`` prints a line without breaking the bar."""

    def __init__(self, enabled: bool, stream=None):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.bar = None
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        self._tqdm = tqdm

    def start(self, total, desc):
        if not self.enabled:
            return
        if self._tqdm is not None:
            self.bar = self._tqdm(total=total, desc=desc, leave=False, file=self.stream, dynamic_ncols=True)
        else:
            self.bar = _TextBar(total, desc, self.stream)

    def step(self, postfix=""):
        if self.bar is not None:
            if postfix:
                self.bar.set_postfix_str(postfix)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
