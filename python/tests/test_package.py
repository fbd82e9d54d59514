"""The package as users get it: a wheel built by its build backend, with the module inside."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path


def test_builds_as_a_wheel(tmp_path):
    project = Path(__file__).resolve().parents[1]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--disable-pip-version-check", "-w", str(tmp_path), str(project)],
        check=True,
    )
    (wheel,) = tmp_path.glob("agentstate_adk-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "agentstate_adk/__init__.py" in names and "agentstate_adk/_service.py" in names
    metadata = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Requires-Dist: google-adk" in text and "Requires-Dist: httpx" in text
