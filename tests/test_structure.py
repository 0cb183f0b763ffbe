"""The house: the package's import graph has no circle and points down its layers only, the codelets
install inside mimdsim's namespace, and every repository path the docs and tests name exists.

The graph is read from the source with ``ast`` (every ``import`` and ``from ... import``, at the top
of a module or inside a function: a lazy import is still a dependency), not from what happens to be
imported at run time.
"""
from __future__ import annotations

import ast
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Lowest first. A module may import its own layer (the cycle test keeps that acyclic) or any layer
# below; never one above. Within the SNN workload the same rule orders its roles.
LAYERS = [
    ("errors, argument checks, version, a settings row", ["mimdsim.errors", "mimdsim.checks", "mimdsim.version",
                                                          "mimdsim.setting"]),
    ("codelets, hardware specs, reports, data, named assumptions",
     ["mimdsim.kernels", "mimdsim.arch", "mimdsim.report", "mimdsim.data", "mimdsim.assumptions"]),
    # The workloads' declarations (each workload's workload.py, data only) sit beside the settings table that
    # reads their rows: the configuration imports the registry, and the code they name lies above.
    ("the model, the program IR, optimizers, the configuration (settings and experiment files), the workload "
     "declarations", ["mimdsim.snn", "mimdsim.program", "mimdsim.optim", "mimdsim.config", "mimdsim.workloads.registry",
                      "mimdsim.workloads.declaration", "mimdsim.workloads.*.workload"]),
    ("compiler, engine, GPU model, energy model", ["mimdsim.compiler", "mimdsim.engine", "mimdsim.gpu",
                                                  "mimdsim.energy"]),
    ("poplibs: poplin's planner, the matmul lowering, reductions, single ops; ttnn's on Tensix chips",
     ["mimdsim.poplibs", "mimdsim.tensix"]),
    ("a workload's run settings and mapping", ["mimdsim.workloads.snn.step", "mimdsim.workloads.snn.mapping",
                                               "mimdsim.workloads.snn.study"]),
    ("a workload's programs, work sources and baselines", ["mimdsim.workloads.snn.programs", "mimdsim.workloads.snn.tensix",
                                                           "mimdsim.workloads.snn.placement",
                                                           "mimdsim.workloads.snn.sources",
                                                           "mimdsim.workloads.snn.baselines",
                                                           "mimdsim.workloads.kalman", "mimdsim.workloads.mlp"]),
    ("a workload's entry point and its build from settings", ["mimdsim.workloads.snn.simulate",
                                                              "mimdsim.workloads.snn.activity",
                                                              "mimdsim.workloads.snn.from_settings",
                                                              "mimdsim.workloads.snn"]),
    ("comparisons", ["mimdsim.compare", "mimdsim.workloads.compare", "mimdsim.workloads"]),
    ("training, sweeps, validation", ["mimdsim.training", "mimdsim.sweep", "mimdsim.validation"]),
    ("the package", ["mimdsim"]),
    ("the front door: the command line and the execution of its settings (python -m mimdsim; the trace seed's "
     "writer runs a default compare)", ["mimdsim.cli", "mimdsim.__main__", "mimdsim.trace_seed"]),
]


def modules() -> dict[str, pathlib.Path]:
    """Every module of the installed package by dotted name; the top-level kernels/ folder is mimdsim.kernels."""
    found = {}
    for base, name in ((ROOT / "mimdsim", "mimdsim"), (ROOT / "kernels", "mimdsim.kernels")):
        for p in base.rglob("*.py"):
            rel = p.relative_to(base)
            if base.name == "mimdsim" and rel.parts[0] == "kernels":
                continue  # the source checkout's bridge to kernels/, read as mimdsim.kernels
            parts = [name, *rel.with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = p
    return found


def import_graph() -> nx.DiGraph:
    mods = modules()
    g = nx.DiGraph()
    for m, path in mods.items():
        g.add_node(m)
        package = m.split(".") if path.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                mod = re.sub(r"^kernels\b", "mimdsim.kernels", mod)
                # `from pkg import sub` depends on pkg.sub where sub is a module, else on pkg
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            else:
                continue
            for t in targets:
                t = re.sub(r"^kernels\b", "mimdsim.kernels", t)
                while t and t not in mods:  # `import a.b.c` where c is a name: the deepest module
                    t = t.rpartition(".")[0]
                if t and t != m:
                    g.add_edge(m, t)
    return g


def layer_of(module: str) -> int:
    """The layer of the longest prefix that names ``module`` (a prefix's ``*`` stands for one name)."""
    best = (-1, None)
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if re.fullmatch(re.escape(p).replace(r"\*", r"[^.]+") + r"(\..+)?", module) and len(p) > best[0]:
                best = (len(p), i)
    assert best[1] is not None, f"{module} is in no layer of tests/test_structure.py's LAYERS: add it"
    return best[1]


def test_the_graph_sees_the_package():
    g = import_graph()
    assert {"mimdsim.kernels.mimdsim_snn.lif", "mimdsim.workloads.snn.programs.compile", "mimdsim.cli.execute"} <= set(g)
    assert g.has_edge("mimdsim.workloads.snn.programs.compile", "mimdsim.workloads.snn.programs.published")
    assert g.has_edge("mimdsim.workloads.snn.sources.execution", "mimdsim.kernels.mimdsim_snn.bptt")


def test_no_import_cycle():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles[:10])


def test_imports_point_down_the_layers():
    up = [(a, b) for a, b in import_graph().edges if layer_of(a) < layer_of(b)]
    assert not up, "imports from a lower layer to a higher one: " + "; ".join(
        f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})" for a, b in up)


@pytest.mark.parametrize("low, high", [
    ("mimdsim.arch", "mimdsim.snn"),  # specs know no model
    ("mimdsim.snn", "mimdsim.arch"),  # the model knows no hardware
    ("mimdsim.kernels", "mimdsim.arch"),  # codelets know a tile, not a chip
    ("mimdsim.engine", "mimdsim.workloads"),  # the engine runs every workload's program and knows none
    ("mimdsim.poplibs", "mimdsim.workloads"),  # the library the programs are built on knows none of them
    ("mimdsim.poplibs", "mimdsim.snn"),  # ... and no model
])
def test_separations(low, high):
    bad = [(a, b) for a, b in import_graph().edges
           if (a == low or a.startswith(low + ".")) and (b == high or b.startswith(high + "."))]
    assert not bad, bad


def test_the_dispatch_is_imported_by_no_program():
    compile_ = "mimdsim.workloads.snn.programs.compile"
    g = import_graph()
    importers = [a for a in g.predecessors(compile_) if a.startswith("mimdsim.workloads.snn.programs")]
    assert not importers, importers


def test_codelets_import_nothing_of_the_simulator_above_them():
    bad = [(a, b) for a, b in import_graph().edges
           if a.startswith("mimdsim.kernels") and not b.startswith("mimdsim.kernels")]
    assert not bad, bad


def test_no_top_level_kernels_package_installed(tmp_path):
    """`pip install .` ships the codelets as mimdsim.kernels only, so another distribution's `kernels`
    package can live beside it: the wheel pip would install holds no top-level `kernels`."""
    pytest.importorskip("setuptools")
    src = tmp_path / "checkout"  # (setuptools 84 fails to build a project in a folder named src)
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("mimdsim", "kernels"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          "-w", str(tmp_path / "wheel"), str(src)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("mimdsim-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"mimdsim", wheel.name.split("-py")[0] + ".dist-info"}
    codelets = {"mimdsim/kernels/" + p.relative_to(ROOT / "kernels").as_posix() for p in (ROOT / "kernels").rglob("*.py")}
    assert codelets <= set(names), sorted(codelets - set(names))  # every group of kernels/, as mimdsim.kernels.*
    top = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("top_level.txt"))).decode().split()
    assert top == ["mimdsim"]


def test_no_symlink_in_the_package():
    """A Windows checkout or a plain file scanner does not follow links: the package holds none."""
    links = [str(p.relative_to(ROOT)) for p in (ROOT / "mimdsim").rglob("*") if p.is_symlink()]
    assert not links, links


def test_the_source_checkout_imports_the_codelets_from_the_kernels_folder():
    """From the repository root (as CI runs the tests) mimdsim.kernels is the top-level kernels/ folder:
    its modules, its registry, once; the bridge mimdsim/kernels/__init__.py holds no codelet of its own."""
    import mimdsim.kernels as kernels
    import mimdsim.kernels.mimdsim_snn.lif as lif

    assert [pathlib.Path(p).resolve() for p in kernels.__path__] == [(ROOT / "kernels").resolve()]
    assert pathlib.Path(lif.__file__).resolve() == (ROOT / "kernels" / "mimdsim_snn" / "lif.py").resolve()
    assert kernels.CODELETS["lif_forward"] is lif.LIF_FORWARD  # one registry: the module was imported once
    assert sorted(p.name for p in (ROOT / "mimdsim" / "kernels").iterdir() if p.suffix == ".py") == ["__init__.py"]


# A repository path: a name with a slash that starts at one of the repository's top-level folders,
# e.g. `mimdsim/workloads/snn/programs/published.py`, `docs/cost-model.md`, or at one of the package's
# folders (`engine/fabric.py` is mimdsim/engine/fabric.py); and a capitalised top-level file (`README.md`).
TOP = ("mimdsim", "kernels", "docs", "tests", "benchmarks", "examples", ".ci")
PACKAGE = tuple(sorted(p.name for p in (ROOT / "mimdsim").iterdir() if p.is_dir() and not p.name.startswith("_")
                       and p.name != "kernels"))
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*[\w/])" % "|".join(re.escape(t) for t in TOP + PACKAGE))
TOP_FILE = re.compile(r"(?<![\w./-])([A-Z][A-Z_-]+\.md)\b")
# Paths a command writes, or that only exist on the user's machine, are not repository files.
WRITTEN = ("docs/figures/", "examples/figures", "tests/golden/", "examples/finkbeiner2024_nmnist.json")


def named_paths(text: str) -> set[str]:
    out = set()
    for p in PATH.findall(text):
        p = p.rstrip(".")
        if "*" in p or "{" in p or p.startswith(WRITTEN):
            continue
        out.add(p)
    return out | set(TOP_FILE.findall(text))


def resolve(p: str) -> pathlib.Path:
    return ROOT / p if p.split("/")[0] in TOP or "/" not in p else ROOT / "mimdsim" / p


def sources_naming_paths():
    docs = [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), ROOT / "benchmarks" / "README.md"]
    for p in docs:
        yield p, p.read_text()
    for p in sorted((ROOT / "tests").glob("*.py")):  # docstrings and comments of the tests
        tree = ast.parse(p.read_text())
        text = [ast.get_docstring(n) or "" for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
        text += [line.split("#", 1)[1] for line in p.read_text().splitlines() if "#" in line]
        yield p, "\n".join(text)
    for p in sorted((ROOT / "mimdsim").rglob("*.py")):  # the package's docstrings and comments
        if "kernels" in p.relative_to(ROOT / "mimdsim").parts[:1]:
            continue
        yield p, p.read_text()
    for p in sorted((ROOT / "kernels").rglob("*.py")):
        yield p, p.read_text()


def test_every_path_named_in_docs_and_tests_exists():
    missing = []
    for src, text in sources_naming_paths():
        for p in named_paths(text):
            if not resolve(p).exists():
                missing.append(f"{src.relative_to(ROOT)} names {p}")
    assert not missing, "\n".join(sorted(missing))


def test_the_path_check_finds_paths():
    assert named_paths("see `docs/cost-model.md` and mimdsim/workloads/snn/programs/published.py.") == \
        {"docs/cost-model.md", "mimdsim/workloads/snn/programs/published.py"}
    assert named_paths("a/docs/x.md, https://github.com/x/mimdsim/y") == set()
    assert named_paths("the fabric (`engine/fabric.py`), DESIGN.md") == {"engine/fabric.py", "DESIGN.md"}
    assert resolve("engine/fabric.py").exists() and not resolve("DESIGN.md").exists()


def _declared_importers(doc: str) -> list[str]:
    """The names after "Imported by:" in a package's docstring (up to the paragraph's end), each as a
    dotted prefix under mimdsim ("mimdsim" itself: the package's __init__)."""
    m = re.search(r"^Imported by: (.*?)(?:\n\n|\Z)", doc, re.S | re.M)
    assert m, "no 'Imported by:' paragraph"
    text = re.sub(r"\([^)]*\)", "", m.group(1).replace("\n", " "))  # drop the parenthesised remarks
    text = text.split(";")[0]  # "...; nothing else."
    return [n.strip(" .") for n in text.split(",") if n.strip(" .")]


def test_every_folder_says_what_lives_there_and_who_may_import_it():
    """Each package's docstring says what lives in it and ends with who may import it ("Imported by:");
    every import into the package from outside it comes from one of those (the floors, as the folder
    states them)."""
    g, mods = import_graph(), modules()
    packages = sorted(m for m, p in mods.items() if p.name == "__init__.py" and m != "mimdsim")
    wrong = []
    for pkg in packages:
        doc = ast.get_docstring(ast.parse(mods[pkg].read_text())) or ""
        assert len(doc.split("Imported by:")[0].strip()) > 40, f"{pkg}: say what lives here"
        declared = ["mimdsim" if d == "mimdsim" else "mimdsim." + d for d in _declared_importers(doc)]
        inside = lambda m: m == pkg or m.startswith(pkg + ".")  # noqa: E731
        for a, b in g.edges:
            if inside(b) and not inside(a) and not any(a == d or a.startswith(d + ".") for d in declared):
                wrong.append(f"{a} imports {b}, but {pkg}'s docstring does not name it under 'Imported by:'")
    assert not wrong, "\n".join(sorted(set(wrong)))
