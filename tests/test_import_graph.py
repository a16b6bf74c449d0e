"""Dependencies point one way: the layers docs/architecture.md lists are the import graph of mmrag/.

An *area* is a folder of ``mmrag/`` or one of its top-level modules (``mmrag/__init__.py`` is the
``facade``).  Every import counts, at module level or inside a function (a lazy import hides an
arrow from a reader, not from this test), and so does a lazily loaded ``"mmrag.x:Name"`` string.
The layers are read from the page itself, so the page and the code cannot drift apart.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
#: the areas that may import the CLI package: the command line itself
ENTRY = {"cli", "commands", "__main__"}
_DOTTED = re.compile(r"^mmrag(\.\w+)+:\w+$")

Edges = dict[tuple[str, str], list[str]]


def doc_layers(text: str) -> list[list[str]]:
    """The areas of each layer, lowest first: the first code block under "## Dependency layers",
    one layer a line, areas separated by commas, an optional ``name:`` label before them."""
    section = text.split("## Dependency layers", 1)[1]
    block = section.split("```", 2)[1]
    layers = []
    for line in block.strip().splitlines():
        names = line.split(":", 1)[1] if ":" in line else line
        layers.append([n.strip() for n in names.split(",") if n.strip()])
    return layers


def _module(path: Path, package: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def area(module: str, subareas: frozenset[str] = frozenset()) -> str:
    """``mmrag.runs.summary`` -> ``runs``; ``mmrag.schema`` -> ``schema``; ``mmrag`` -> ``facade``;
    a sub-package the page lists as an area of its own (``reports.paper``) -> that name."""
    parts = module.split(".")
    if ".".join(parts[1:3]) in subareas:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else "facade"


def _targets(node: ast.AST, module: str, is_package: bool, package: Path) -> list[str]:
    """The mmrag modules an import statement or a dotted-path string names."""
    name = package.name
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")[: None if is_package else -1]
            base = base[: len(base) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        if target == name:  # `from mmrag import runs`: the sub-package, else the facade's name
            return [f"{name}.{a.name}" if (package / a.name).exists() else name for a in node.names]
        return [target]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DOTTED.match(node.value):
        return [node.value.split(":", 1)[0]]
    return []


def import_edges(package: Path, subareas: frozenset[str] = frozenset()) -> Edges:
    """``(area, imported area) -> ["file:line module", ...]`` over every ``.py`` under ``package``."""
    edges: Edges = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        module = _module(path, package)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for target in _targets(node, module, path.name == "__init__.py", package):
                if target != package.name and not target.startswith(package.name + "."):
                    continue
                a, b = area(module, subareas), area(target, subareas)
                if a != b:
                    edges[(a, b)].append(f"{path.relative_to(package.parent)}:{getattr(node, 'lineno', '?')} {target}")
    return dict(edges)


def areas_of(package: Path, subareas: frozenset[str] = frozenset()) -> set[str]:
    return {area(_module(p, package), subareas) for p in package.rglob("*.py")}


def layer_violations(edges: Edges, layers: list[list[str]]) -> list[str]:
    """Each import of an area on a later (higher) line than the importer's, with where it is."""
    level = {a: i for i, names in enumerate(layers) for a in names}
    return [
        f"{a} (line {level[a] + 1}) imports {b} (line {level[b] + 1}): {where[0]}"
        for (a, b), where in sorted(edges.items())
        if a in level and b in level and level[b] > level[a]
    ]


def find_cycle(edges: Edges) -> list[str] | None:
    """One cycle of the area graph (areas in order, first repeated last), or None."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return None


def subareas_of(layers: list[list[str]]) -> frozenset[str]:
    return frozenset(a for names in layers for a in names if "." in a)


@pytest.fixture(scope="module")
def layers() -> list[list[str]]:
    return doc_layers(DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def edges(layers) -> Edges:
    return import_edges(ROOT / "mmrag", subareas_of(layers))


def test_every_area_is_on_exactly_one_line_of_the_page(layers):
    """Every area of the code has its place; a listed name the code lacks is not an error (the
    page may be merged ahead of the branch that adds the area), but most names must exist."""
    listed = [a for names in layers for a in names]
    assert len(listed) == len(set(listed)), f"an area is listed twice: {listed}"
    found = areas_of(ROOT / "mmrag", subareas_of(layers))
    assert found <= set(listed), f"areas the page does not place: {sorted(found - set(listed))}"
    assert len(set(listed) - found) <= 2, f"the page names areas that do not exist: {sorted(set(listed) - found)}"


def test_imports_point_down_the_layers(edges, layers):
    assert layer_violations(edges, layers) == []


def test_no_two_areas_import_each_other_and_the_area_graph_has_no_cycle(edges):
    both_ways = sorted(f"{a} <-> {b}: {edges[(a, b)][0]} / {edges[(b, a)][0]}" for a, b in edges if (b, a) in edges)
    assert both_ways == []
    cycle = find_cycle(edges)
    assert cycle is None, " -> ".join(cycle or []) + "".join(
        f"\n  {edges[(x, y)][0]}" for x, y in zip(cycle or [], (cycle or [])[1:]) if (x, y) in edges
    )


def test_the_library_never_imports_the_command_line(edges):
    assert [w for (a, b), where in edges.items() if b in ENTRY and a not in ENTRY for w in where] == []


def test_the_scanner_sees_lazy_imports_relative_imports_and_dotted_strings(tmp_path):
    """The checks above can fail: a fake package whose arrows hide in a function body, a relative
    import and a dotted-path string is caught on every count."""
    pkg = tmp_path / "mmrag"
    for folder in ("low", "high", "commands"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("def f():\n    from mmrag.high.b import g\n    return g\n")
    (pkg / "high" / "b.py").write_text("from ..low import a\n\nBUILDER = 'mmrag.commands.run:main'\n")
    edges = import_edges(pkg)
    assert set(edges) == {("low", "high"), ("high", "low"), ("high", "commands")}
    assert edges[("low", "high")] == ["mmrag/low/a.py:2 mmrag.high.b"]
    assert find_cycle(edges) is not None
    assert layer_violations(edges, [["low"], ["high"], ["commands"]]) == [
        "high (line 2) imports commands (line 3): mmrag/high/b.py:3 mmrag.commands.run",
        "low (line 1) imports high (line 2): mmrag/low/a.py:2 mmrag.high.b",
    ]
    (pkg / "high" / "sub").mkdir()
    (pkg / "high" / "sub" / "__init__.py").write_text("from mmrag.high import b\n")
    assert ("high.sub", "high") in import_edges(pkg, frozenset({"high.sub"}))
    assert doc_layers("## Dependency layers\n\n```\ncore: a, b\nc\n```\n") == [["a", "b"], ["c"]]
