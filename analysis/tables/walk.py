"""The one reading order of a stored report: stages, groups and categories in the
report's ``stage_order``, ``group_order`` and ``categories`` lists (jsonb keeps no
key order), annotators by natural order of their pseudonyms. Every table and figure
walks the report through these functions."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


def stage_order(report: dict) -> list[str]:
    return list(report.get("stage_order") or [])


def group_order(report: dict) -> list[str]:
    return list(report.get("group_order") or [])


def group_part(report: dict, group: str, part: str) -> Any:
    """``part`` ("stages", "human_cross_stage", "annotators") of ``group``, or None."""
    return ((report.get("groups") or {}).get(group) or {}).get(part)


def cells_in_order(report: dict) -> list[tuple[str, str, dict]]:
    """(group, stage, stage cell) for every analysed group × stage, in reading order."""
    result = []
    for group in group_order(report):
        stages = group_part(report, group, "stages") or {}
        for stage in stage_order(report):
            if stages.get(stage) is not None:
                result.append((group, stage, stages[stage]))
    return result


def shifts_in_order(report: dict) -> list[tuple[str, dict]]:
    """(group, cross-stage shift) for every group and pair of consecutive stages."""
    return [
        (group, shift or {})
        for group in group_order(report)
        for shift in group_part(report, group, "human_cross_stage") or []
    ]


def category_labels(report: dict) -> list[tuple[str, str]]:
    """(slug, label) of the study's error categories, in display order."""
    return [(c["slug"], c.get("label") or c["slug"]) for c in report.get("categories") or []]


def categories_not_offered(report: dict, stage: str) -> frozenset[str]:
    """The slugs of the study's error categories ``stage`` did not offer (the
    report's ``stage_categories``; none known in a report stored before it)."""
    offered = (report.get("stage_categories") or {}).get(stage)
    if offered is None:
        return frozenset()
    return frozenset(slug for slug, _ in category_labels(report) if slug not in offered)


def not_offered_in_row(report: dict, *, stage_at: int = 1) -> Callable[[tuple], frozenset[str]]:
    """For ``build_table``'s ``not_offered``: the categories not offered in the stage
    a row names at ``stage_at`` of its identifying values (after the group)."""
    return lambda values: categories_not_offered(report, values[stage_at])


def _natural_key(name: str):
    return [int(part) if part.isdigit() else part.casefold() for part in re.split(r"(\d+)", name)]


def annotators_in_order(annotators: dict) -> list[str]:
    """Pseudonyms sorted naturally ("Expert 2" before "Expert 10")."""
    return sorted(annotators, key=_natural_key)


def annotators_by_group(report: dict, *, pooled: str | None = None) -> list[tuple[str, str, dict]]:
    """(group, pseudonym, consistency entry) in group order, then natural order; with
    ``pooled``, each group's pooled entry last, under that name."""
    result = []
    for group in group_order(report):
        annotators = group_part(report, group, "annotators") or {}
        for name in annotators_in_order(annotators):
            result.append((group, name, annotators[name] or {}))
        if pooled is not None and annotators:
            result.append((group, pooled, group_part(report, group, "annotators_pooled") or {}))
    return result


KINDS = ("human", "synthetic")


def distribution_rows(cell: dict) -> list[str]:
    """The label distribution's rows of one group × stage: human and synthetic
    reflections, then each source (the human source first)."""
    shares = cell.get("label_distribution") or {}
    sources = [key for key in shares if key not in KINDS]
    sources.sort(key=lambda s: (s != "Human", str(s).casefold()))
    return [key for key in KINDS if key in shares] + sources


def group_pair(entry: dict) -> tuple[str, str]:
    """The two group names of a between-groups entry (its ``groups`` list)."""
    group_a, group_b = ([str(g) for g in entry.get("groups") or []] + ["", ""])[:2]
    return group_a, group_b


def per_group_in_order(report: dict, key: str) -> list[tuple[str, dict]]:
    """(group, entry) for every entry of the per-group list ``report[key]``
    ("systems", "system_pairs"), in group order, each group's entries in their
    stored order."""
    per_group = report.get(key) or {}
    return [
        (group, entry or {})
        for group in group_order(report)
        for entry in per_group.get(group) or []
    ]


def generation_settings_in_order(report: dict) -> list[tuple[str, str, str, str, dict]]:
    """(group, stage, setting, value, entry) in group and stage order, then setting
    and value in ``str`` order."""
    result = []
    settings = report.get("generation_settings") or {}
    for group in group_order(report):
        stages = settings.get(group) or {}
        for stage in stage_order(report):
            keys = stages.get(stage) or {}
            for key in sorted(keys, key=str):
                for value in sorted(keys[key] or {}, key=str):
                    result.append((group, stage, key, value, keys[key][value] or {}))
    return result
