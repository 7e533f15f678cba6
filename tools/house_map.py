"""The map of docs/development.md, drawn from the code: for each layers contract of
`pyproject.toml`, its floors top to bottom (the contract's order) and, beside each part, the
parts it imports (every `import` in its modules, found with `ast`, lazy ones included).

`python tools/house_map.py` prints the map, `--write` puts it into docs/development.md between
its markers; `tests/test_house_map.py` fails when the page's copy
differs, so the page can only draw arrows the code has. An arrow to a floor above is marked `↑`
(the contract then excuses it in `ignore_imports`, or `lint-imports` fails).
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tunemem"


@dataclass(frozen=True)
class Contract:
    name: str
    container: str  # "" when the layers are full module names
    floors: tuple[tuple[str, ...], ...]  # top floor first; parts sharing a floor


def contracts(pyproject: Path = ROOT / "pyproject.toml") -> list[Contract]:
    """The layers contracts of the import-linter configuration, in the file's order."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    out = []
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] != "layers":
            continue
        floors = tuple(
            tuple(part.strip() for part in layer.split("|")) for layer in contract["layers"]
        )
        for container in contract.get("containers") or [""]:
            out.append(Contract(contract["name"], container, floors))
    return out


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, root: Path = ROOT) -> Iterator[str]:
    """Every module name one source file imports (relative imports resolved), and every string
    that is a whole module name of the package (a registry's lazy import by name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package[: len(package) - node.level + 1]
                base = ".".join([*stem, base] if base else stem)
            yield base
            # `from package import module` imports the module too
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if all(piece.isidentifier() for piece in node.value.split(".")):
                yield node.value


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports."""
    graph: dict[str, set[str]] = {}
    paths = sorted((root / PACKAGE).rglob("*.py"))
    known = {module_name(path, root) for path in paths}
    for path in paths:
        graph[module_name(path, root)] = {
            name for name in imports(path, root) if _under_known(name, known)
        }
    return graph


def _under_known(name: str, known: set[str]) -> bool:
    """Whether `name` is a module of the package or a name inside one (`pkg.mod.Class`)."""
    while name:
        if name in known:
            return True
        name = name.rpartition(".")[0]
    return False


def _part_of(module: str, parts: Iterable[str]) -> str | None:
    for part in parts:
        if module == part or module.startswith(part + "."):
            return part
    return None


def _prefix(contract: Contract) -> str:
    """What every part's full name starts with: the container, or the parts' common package."""
    if contract.container:
        return contract.container
    names = [part.split(".") for floor in contract.floors for part in floor]
    common = []
    for pieces in zip(*names, strict=False):
        if len(set(pieces)) > 1:
            break
        common.append(pieces[0])
    return ".".join(common[: min(len(n) for n in names) - 1])


def arrows(contract: Contract, graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Part (and module beside the floors) -> the parts of the contract its modules import;
    names are short: without the prefix every part shares."""
    prefix = _prefix(contract) + "."
    parts = [prefix + part.removeprefix(prefix) for floor in contract.floors for part in floor]
    depth = prefix.count(".")
    out: dict[str, set[str]] = {part: set() for part in parts}
    for module, imported in graph.items():
        source = _part_of(module, parts)
        if source is None and module.startswith(prefix):
            source = ".".join(module.split(".")[: depth + 1])  # beside the floors
        if source is None:
            continue
        for name in imported:
            target = _part_of(name, parts)
            if target is not None and target != source:
                out.setdefault(source, set()).add(target)
        out.setdefault(source, set())
    return {
        part.removeprefix(prefix): {t.removeprefix(prefix) for t in ts} for part, ts in out.items()
    }


def picture(contract: Contract, graph: dict[str, set[str]]) -> str:
    """One contract's floors and arrows as text."""
    found = arrows(contract, graph)
    prefix = _prefix(contract) + "."
    floors = [[part.removeprefix(prefix) for part in floor] for floor in contract.floors]
    floor_of = {part: i for i, floor in enumerate(floors) for part in floor}
    beside = sorted(set(found) - set(floor_of))
    width = max(len(p) for p in found)
    lines = []
    for i, floor in enumerate([*floors, beside]):
        for j, part in enumerate(floor):
            label = "" if j else f"floor {len(floors) - i}" if i < len(floors) else "beside"
            targets = sorted(found[part], key=lambda t: (floor_of[t], t))
            shown = [f"{t} ↑" if floor_of[t] < i < len(floors) else t for t in targets]
            lines.append(f"{label:8} {part:{width}}  → {', '.join(shown) or '(nothing)'}")
    return "\n".join(lines)


def house_map(root: Path = ROOT) -> str:
    """Every layers contract's picture, as docs/development.md shows it."""
    graph = import_graph(root)
    blocks = []
    for contract in contracts(root / "pyproject.toml"):
        blocks.append(
            f"`{_prefix(contract)}`: {contract.name}\n\n```\n{picture(contract, graph)}\n```\n"
        )
    return "\n".join(blocks)


START = "<!-- map: generated by `python tools/house_map.py` -->\n"
END = "<!-- /map -->"


def write_map(page: Path = ROOT / "docs" / "development.md") -> None:
    """Replace the map between the page's markers with the code's."""
    text = page.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{page}: the map's markers are missing ({START.strip()} ... {END})")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    page.write_text(head + START + house_map() + END + tail)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_map()
    elif sys.argv[1:]:
        raise SystemExit("usage: python tools/house_map.py [--write]")
    else:
        sys.stdout.write(house_map())
