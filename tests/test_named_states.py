"""States are named once, in their enum: no code or template compares a status,
outcome or state with a bare string (a typo there would never match and never fail)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``x.status == "done"``, ``outcome != 'partial'``, ``state in ("open", …)`` and the
#: template forms of the same.
BARE = re.compile(r"""\b(status|outcome|state)\s*(==|!=|\bin\b)\s*[\(\[]?\s*["'][a-z_]+["']""")


def bare_comparisons() -> list[str]:
    found = []
    for folder, pattern in (
        ("studies", "*.py"),
        ("analysis", "*.py"),
        ("annotation_site", "*.py"),
        ("templates", "*.html"),
    ):
        for path in sorted((ROOT / folder).rglob(pattern)):
            if "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if BARE.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_no_state_is_compared_with_a_bare_string():
    assert bare_comparisons() == []


def test_the_check_finds_a_bare_comparison():
    assert BARE.search('{% if run.status == "queued" %}')
    assert BARE.search("if state.status != 'done':")
    assert BARE.search('if back.outcome in ("partial", "completed"):')
    assert not BARE.search("{% if run.status == run.Status.QUEUED %}")
