"""The product explains itself in its own words: no file points readers at a
specification document they do not have."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Built from parts so this file does not match itself.
POINTERS = re.compile("BRI" + r"EF\b|\u00a7")


def tracked_text_files() -> list[Path]:
    try:
        names = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot list the tracked files with git: {exc}")
    return [ROOT / name for name in names if not name.endswith((".png", ".ico", ".woff2"))]


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the git checkout to list files")
def test_no_file_refers_readers_to_the_specification_by_section():
    files = tracked_text_files()
    assert len(files) > 100  # the listing worked
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if POINTERS.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
