"""A sweep under faults loses no point and writes none twice: killed (SIGKILL) or interrupted (SIGINT)
mid-sweep and resumed, a stale lock left by a dead run, a results file that refuses a record (a
file-size limit, a full disk: one line naming the file, the space needed and the command that resumes).
Concurrent runs, a run waiting on another, a torn last line and a damaged results file or lock are in
tests/test_sweep.py and tests/test_errors.py."""
import errno
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from mimdsim.cli import main
from mimdsim.sweep import load_results, load_sweep, run_serial

ROOT = os.path.join(os.path.dirname(__file__), "..")
SWEEP = """[model]
layers = [200, 100, 10]
timesteps = 20
batch = 8

[sweep]
results = "r.jsonl"

[sweep.axes]
"run.activity" = [0.01, 0.02, 0.03, 0.04]
"chip.tiles" = [128, 192, 256, 320]
"""
POINTS = 16


@pytest.fixture
def sweep(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SWEEP)
    return str(path)


def _start(path, **kw):
    return subprocess.Popen([sys.executable, "-m", "mimdsim", "sweep", path, "--serial", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, **kw)


def _lines(results) -> list[str]:
    return open(results).read().splitlines() if os.path.exists(results) else []


def _stop_after(path, records: int, sig, attempts: int = 3):
    """Start the sweep and send it ``sig`` once ``records`` points are in its results file, while it is
    still mid-sweep; returns the run. The sweep is frozen (SIGSTOP) before the file is read again, so
    the check that points are left and the signal see one state: a run that wrote every point before
    it was frozen (a loaded machine can let the last ~0.2 s of points pass between two polls) is no
    test, and the sweep is run again from an empty results file."""
    results = load_sweep(path).results
    for _ in range(attempts):
        if os.path.exists(results):
            os.remove(results)
        run = _start(path)
        deadline = time.monotonic() + 120
        while len(_lines(results)) < records:
            assert run.poll() is None, run.communicate()
            if time.monotonic() > deadline:
                run.kill()
                raise AssertionError(f"the sweep wrote no records in 120 s: {run.communicate()}")
            time.sleep(0.02)
        run.send_signal(signal.SIGSTOP)
        try:
            _wait_stopped(run.pid)
        except AssertionError:
            run.kill()
            run.communicate()
            raise
        # frozen with two points or more left (one may be mid-write: it lands before the signal is taken)
        if run.poll() is None and len(_lines(results)) < POINTS - 1:
            run.send_signal(sig)
            run.send_signal(signal.SIGCONT)
            return run
        run.send_signal(signal.SIGCONT)
        run.communicate(timeout=60)
    raise AssertionError(f"the sweep finished before it could be stopped, {attempts} times")


def _wait_stopped(pid: int) -> None:
    """Until the kernel has stopped ``pid`` (state T) or it has exited (a signal is queued, not yet taken)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:  # no /proc (not Linux), or already reaped: a moment is enough for a sent signal
            time.sleep(0.05)
            return
        if state in "TtZX":
            return
        time.sleep(0.001)
    raise AssertionError(f"the sweep (pid {pid}) was not stopped 10 s after SIGSTOP (state {state})")


def _resume_and_check(path) -> None:
    """A second run computes only what the first left; the file then holds every point exactly once."""
    sw = load_sweep(path)
    kept = len(load_results(sw.results))
    assert 0 < kept < POINTS
    assert run_serial(sw) == POINTS - kept
    ids = [json.loads(line)["id"] for line in _lines(sw.results) if line.startswith("{") and line.endswith("}")]
    assert len(ids) == POINTS and len(set(ids)) == POINTS
    assert run_serial(load_sweep(path)) == 0


def test_a_sweep_killed_mid_run_resumes_without_losing_or_repeating_a_point(sweep):
    run = _stop_after(sweep, 2, signal.SIGKILL)
    run.communicate(timeout=60)
    assert run.returncode == -signal.SIGKILL
    _resume_and_check(sweep)


def test_an_interrupted_sweep_says_what_it_kept_in_one_line_and_resumes(sweep):
    results = load_sweep(sweep).results
    run = _stop_after(sweep, 2, signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line, err
    kept = len(load_results(results))
    assert f"interrupted; {kept} of {POINTS} points are kept in {results}; run the same command again" in line
    _resume_and_check(sweep)


def test_a_stale_lock_from_a_dead_run_does_not_hold_up_the_next(sweep, tmp_path):
    """The lock is an flock, released by the kernel when its holder dies: the file a killed run leaves
    (its pid inside) is no lock, and the next run neither waits nor says another sweep is writing."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    results = load_sweep(sweep).results
    with open(results + ".lock", "w") as f:
        f.write(f"pid {dead.stdout.strip()}")
    run = _start(sweep)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert "is writing" not in out + err and f"computed {POINTS} new point(s)" in out
    assert len(load_results(results)) == POINTS


def _limit_file_size(limit: int):
    def set_limit():
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return set_limit


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE as Linux applies it")
def test_a_file_size_limit_ends_the_sweep_in_one_line_with_the_space_needed_and_how_to_resume(sweep):
    sw = load_sweep(sweep)
    assert run_serial(sw, limit=4) == 4
    size = os.path.getsize(sw.results)
    run = _start(sweep, preexec_fn=_limit_file_size(size + 1000))  # less than one more record
    _, err = run.communicate(timeout=120)
    assert run.returncode == 2, err
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line, err
    assert f"the sweep's results file {sw.results!r} refused a record (File too large): the 12 point(s) left need " \
           f"about" in line
    assert "the 4 point(s) written are kept; raise the file-size limit (ulimit -f)" in line
    assert f"then run `mimdsim sweep {sweep}` again to compute the rest" in line
    assert os.path.getsize(sw.results) == size  # the part of the record that went in is taken out again
    assert len(load_results(sw.results)) == 4
    assert run_serial(load_sweep(sweep)) == POINTS - 4


def test_a_full_disk_ends_the_sweep_in_one_line_and_keeps_every_record(sweep, monkeypatch, capsys):
    import builtins

    from mimdsim.sweep import runner

    sw = load_sweep(sweep)
    assert run_serial(sw, limit=3) == 3
    size = os.path.getsize(sw.results)

    class FullDisk:  # a file that takes the first bytes of a write, then runs out of space
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            self.f.write(text[:10])
            self.f.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def full_disk_open(path, mode="r", *args, **kw):
        f = builtins.open(path, mode, *args, **kw)
        return FullDisk(f) if mode == "a" and str(path) == sw.results else f

    monkeypatch.setattr(runner, "open", full_disk_open, raising=False)
    capsys.readouterr()
    assert main(["sweep", sweep, "--serial", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert f"refused a record (No space left on device): the 13 point(s) left need about" in err
    assert "free that much disk space or choose a results file on another disk" in err
    assert os.path.getsize(sw.results) == size and len(load_results(sw.results)) == 3
    monkeypatch.undo()
    assert run_serial(load_sweep(sweep)) == POINTS - 3
