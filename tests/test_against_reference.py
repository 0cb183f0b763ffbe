"""benchmarks/against_reference.py, the harness that times today's code against a pinned reference: the
alternation of its runs, the ratio and spread arithmetic, and that each child imports its own tree
(fake trees, no export of the reference, nothing timed)."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", os.path.join(ROOT, "benchmarks", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


harness = _load("against_reference")


def test_runs_alternate_after_one_warm_up_each():
    ref, new = harness.Side("ref", "/a"), harness.Side("today", "/b")
    calls = []
    result = harness.compare(ref, new, lambda side, i: calls.append((side.label, i)) or 1.0, pairs=3)
    expected = [("ref", -1), ("today", -1), ("ref", 0), ("today", 0), ("ref", 1), ("today", 1), ("ref", 2),
                ("today", 2)]
    assert calls == expected and result.order == expected
    assert len(result.pairs) == 3 and len(result.load_before) == 3
    assert harness.compare(ref, new, lambda s, i: 1.0, pairs=2, warm=False).order \
        == [("ref", 0), ("today", 0), ("ref", 1), ("today", 1)]
    with pytest.raises(ValueError, match="at least one pair"):
        harness.compare(ref, new, lambda s, i: 1.0, pairs=0)


def test_ratio_is_reference_over_today_per_pair_with_median_and_range():
    ref, new = harness.Side("bfbd7d3", "/a"), harness.Side("today", "/b")
    seconds = {("bfbd7d3", 0): 4.0, ("today", 0): 2.0,  # today twice as fast: 2.0
               ("bfbd7d3", 1): 3.0, ("today", 1): 6.0,  # half as fast: 0.5
               ("bfbd7d3", 2): 5.0, ("today", 2): 4.0}  # 1.25
    result = harness.compare(ref, new, lambda side, i: seconds.get((side.label, i), 9.0), pairs=3)
    assert result.pairs == [(4.0, 2.0), (3.0, 6.0), (5.0, 4.0)]
    assert result.ratios == [2.0, 0.5, 1.25]
    assert result.median == 1.25 and result.spread == (0.5, 2.0)
    text = "\n".join(result.lines())
    assert "median 1.25 (0.50-2.00) over 3 alternating pairs" in text and "load average" in text
    even = harness.Comparison(ref, new, [(1.0, 1.0), (3.0, 1.0)], [], (0, 0, 0), (0, 0, 0))
    assert even.median == 2.0  # the mean of the middle two for an even count


def _fake_tree(folder, name):
    pkg = os.path.join(folder, name, "mimdsim")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write(f"TREE = {name!r}\n")
    return os.path.join(folder, name)


def test_each_child_imports_its_own_tree(tmp_path):
    a, b = _fake_tree(str(tmp_path), "ref"), _fake_tree(str(tmp_path), "new")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    probe = [sys.executable, "-c", "import json, os, mimdsim; print(json.dumps({'tree': mimdsim.TREE, "
             "'path': os.environ['PYTHONPATH'], 'arg': '{tree}'}))"]
    for tree, name in ((a, "ref"), (b, "new")):
        got = harness.run_child(tree, probe, str(scratch))
        assert got.reported == {"tree": name, "path": tree, "arg": tree} and got.wall > 0
        assert harness.check_imports(harness.Side(name, tree), str(scratch)).startswith(tree)
    empty = tmp_path / "empty"
    empty.mkdir()  # no mimdsim here: the import falls through to another tree, which is refused
    with pytest.raises(SystemExit, match="empty"):
        harness.check_imports(harness.Side("empty", str(empty)), str(scratch))
