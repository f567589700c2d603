"""The shape of the house, in figures: files and lines per package, import cycles, the share of
hand-written lines whose imports pull in trio, the longest module and function.

    .venv/bin/python bench/house.py            # this checkout
    .venv/bin/python bench/house.py --json     # the same, as JSON

"Pulls in trio" is transitive: a module that imports trio, or imports (at any depth, under
TYPE_CHECKING too) a module of ahp_bridge that does. Generated code (wire models, gRPC stubs,
the ActionType enum) is left out of every figure. Lines are physical lines of the file.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]  # --root another checkout (a before/after)
GENERATED = ("_generated.py", "_generated_v1.py", "_pb2.py", "_pb2_grpc.py", "action_types.py")


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    base = ROOT / "src"
    for path in sorted((base / "ahp_bridge").rglob("*.py")):
        if path.name.endswith(GENERATED) or _stamped(path):
            continue
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _stamped(path: Path) -> bool:
    """A file a script writes says so on its first line (the 0.6/0.8 wire models, ...)."""
    with path.open() as f:
        return f.readline().startswith("# DO NOT EDIT")


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def longest_function(paths: dict[str, Path]) -> tuple[str, int]:
    best = ("", 0)
    for name, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > best[1]:
                    best = (f"{name}.{node.name}", length)
    return best


def figures() -> dict[str, object]:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "adapters")]
    graph = grimp.build_graph("ahp_bridge", include_external_packages=True, cache_dir=None)
    paths = modules()
    trio_direct = {m for m in paths if graph.direct_import_exists(importer=m, imported="trio")}
    pulls = {
        m
        for m in paths
        if m in trio_direct or graph.find_downstream_modules("trio", as_package=True) & {m}
    }
    total = sum(lines(p) for p in paths.values())
    per_package: dict[str, tuple[int, int]] = {}
    for name, path in paths.items():
        parts = name.split(".")
        package = ".".join(parts[:2]) if len(parts) > 1 else parts[0]
        if package == "ahp_bridge.host" and len(parts) > 2 and (path.parent.name != "host"):
            package = ".".join(parts[:3])
        files, count = per_package.get(package, (0, 0))
        per_package[package] = (files + 1, count + lines(path))
    cycles = 0
    for package in sorted({".".join(m.split(".")[:-1]) for m in paths} | {"ahp_bridge"}):
        if package in paths:
            breakers = graph.nominate_cycle_breakers(package)
            cycles += len(breakers)
    longest_module = max(paths.items(), key=lambda item: lines(item[1]))
    function, length = longest_function(paths)
    return {
        "modules": len(paths),
        "lines": total,
        "packages": {k: {"files": f, "lines": n} for k, (f, n) in sorted(per_package.items())},
        "cycle_breakers": cycles,
        "trio_lines_share": round(sum(lines(paths[m]) for m in pulls) / total, 3),
        "trio_modules": len(pulls),
        "longest_module": [longest_module[0], lines(longest_module[1])],
        "longest_function": [function, length],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--root", type=Path, help="another checkout of the repository")
    args = parser.parse_args()
    if args.root is not None:
        global ROOT
        ROOT = args.root.resolve()
    result = figures()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['modules']} modules, {result['lines']} lines (generated code left out)")
    for package, row in result["packages"].items():  # type: ignore[attr-defined]
        print(f"  {package:34} {row['files']:3} files {row['lines']:6} lines")
    print(f"import cycles (dependencies to remove to break them): {result['cycle_breakers']}")
    share = result["trio_lines_share"]
    print(f"lines whose imports pull in trio: {share:.0%} ({result['trio_modules']} modules)")
    module, module_lines = result["longest_module"]  # type: ignore[misc]
    function, function_lines = result["longest_function"]  # type: ignore[misc]
    print(f"longest module: {module} ({module_lines} lines)")
    print(f"longest function: {function} ({function_lines} lines)")


if __name__ == "__main__":
    main()
