"""The import contracts of `make lint` (``[tool.importlinter]`` in pyproject.toml):
analysis builds on studies and never the reverse, the project package sits above both,
no package's modules import each other in a cycle, lazily or not, and inside each app
the interfaces sit above the services, the services above the selectors, the selectors
above the models and the models above the protocol (in analysis: the pure report and
metrics)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("annotation_site", "analysis", "studies")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    command = Path(sys.executable).with_name("lint-imports")
    if not command.exists():
        pytest.fail("lint-imports is missing: install the dev extras (make install)")
    return subprocess.run(
        [str(command), "--no-logo", "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_code_keeps_the_import_contracts():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 4 kept, 0 broken." in done.stdout


@pytest.fixture
def copy_of_the_code(tmp_path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def _add_function(path: Path, body: str) -> None:
    path.write_text(path.read_text() + f"\n\ndef _added():\n    {body}\n")


def test_a_lazy_import_of_analysis_in_studies_breaks_the_layers(copy_of_the_code):
    _add_function(copy_of_the_code / "studies/tasks.py", "from analysis import services")
    done = lint_imports(copy_of_the_code)
    assert done.returncode == 1
    assert "studies is not allowed to import analysis" in done.stdout
    assert "- studies.tasks -> analysis.services" in done.stdout


def test_a_lazy_import_of_the_tasks_in_the_services_is_a_cycle(copy_of_the_code):
    _add_function(copy_of_the_code / "analysis/services.py", "from . import tasks")
    done = lint_imports(copy_of_the_code)
    assert done.returncode == 1
    assert "No cycles are allowed in analysis." in done.stdout


@pytest.mark.parametrize(
    ("module", "added_import", "broken"),
    [
        (
            "studies/selectors/progress.py",
            "from studies.services import stages",
            "studies.selectors is not allowed to import studies.services",
        ),
        (
            "studies/models/study.py",
            "from studies import selectors",
            "studies.models is not allowed to import studies.selectors",
        ),
        (
            "analysis/report/build.py",
            "from analysis.selectors import judgements",
            "analysis.report is not allowed to import analysis.selectors",
        ),
    ],
    ids=["selector-calls-service", "model-reads-selector", "report-reads-database"],
)
def test_an_import_up_the_layers_inside_an_app_breaks_them(
    copy_of_the_code, module, added_import, broken
):
    _add_function(copy_of_the_code / module, added_import)
    done = lint_imports(copy_of_the_code)
    assert done.returncode == 1
    assert broken in done.stdout
