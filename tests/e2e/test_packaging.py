"""The wheel as a user gets it: SPDX licence metadata and the LICENSE file, the adapters' support
package, and what the Copilot adapter tells someone who has no checkout (and so no scripts/) to
run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_its_licence_and_tells_wheel_users_the_npm_command(
    tmp_path: Path,
) -> None:
    # Built from a copy of what the wheel is made of: a build in the checkout leaves an
    # `<distribution>.egg-info` there, whose entry points a Python started in the checkout
    # would see beside the installed ones (every provider twice in a shared environment).
    before = set(REPO.glob("*.egg-info"))
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("src", "adapters"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = (tmp_path / "dist").glob("ahp_host_bridge-*.whl")  # ahp-bridge is taken
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        fields = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
        [licence] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(licence).decode().startswith("MIT License")
    assert "License-Expression: MIT" in fields
    assert "Name: ahp-host-bridge" in fields  # the free name on the package index
    assert set(REPO.glob("*.egg-info")) == before  # the checkout is left as it was
    with zipfile.ZipFile(wheel) as archive:
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "ahp-bridge = ahp_bridge.cli:main" in archive.read(entry_points).decode()
    assert "License-File: LICENSE" in fields
    assert not [n for n in names if n.startswith("scripts/") or "install-copilot-cli" in n]

    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    probe = (
        "import ahp_bridge_copilot.options as o\nprint(o.__file__)\nprint(o.install_hint())\n"
        "import ahp_bridge_support as s\nprint(s.__file__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site), "HOME": str(tmp_path)},
        cwd=tmp_path,
    ).stdout.splitlines()
    assert out[0].startswith(str(site))  # the installed wheel, not this checkout
    assert out[2].startswith(str(site))  # the adapters' support package is in the wheel too
    assert out[1] == (
        "install the tested release with `npm install --prefix ~/.local/share/ahp-bridge/copilot "
        "@github/copilot@1.0.102` (found there without further setup), or set cli_path in "
        "[providers.copilot] (or COPILOT_CLI_PATH) to the binary"
    )
