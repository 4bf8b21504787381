"""The report's free-text keys: ``codebook`` and ``descriptions`` (per group and
stage, the descriptions given with a "No", their coding into the study's codebook
and the agreement of two coders), and the null statistics of the categories a stage
did not offer (all of them in a stage that asks for descriptions instead).

This module only slices the analysed frame (the judgements every other block reads)
and names the results; the statistics live in
:mod:`analysis.metrics.protocol.descriptions`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..metrics.protocol.descriptions import description_summary, no_codings


@dataclass(frozen=True)
class Codings:
    """What :func:`analysis.selectors.judgements.description_codings` reads: the primary and the
    second coder's codings (long form, see :mod:`analysis.metrics.protocol.descriptions`)
    and the codebook as (slug, label) in display order."""

    frame: pd.DataFrame = field(default_factory=no_codings)
    codebook: list[tuple[str, str]] = field(default_factory=list)


def descriptions_build(
    *,
    data: pd.DataFrame,
    codings: Codings | None,
    cells: Mapping[tuple[str, str], np.ndarray],
) -> dict:
    """``descriptions.<group>.<stage>`` for every analysed group × stage: ``cells``
    maps each (group, stage), in reading order, to its rows of ``data`` (a boolean
    mask, as :func:`analysis.report.build.report_build` slices them)."""
    codings = codings or Codings()
    slugs = [slug for slug, _ in codings.codebook]
    # Only the columns read here: slicing a million rows then moves little.
    columns = ["judgement_id", "coherent", "source"]
    data = data[[*columns, "described"] if "described" in data else columns]
    result: dict = {}
    for (group, stage), rows in cells.items():
        result.setdefault(group, {})[stage] = description_summary(
            judgements=data.loc[rows], codings=codings.frame, codes=slugs
        )
    return result


def codebook_entries(codings: Codings | None) -> list[dict]:
    """The report's ``codebook``: [{slug, label}] in display order."""
    return [{"slug": s, "label": label} for s, label in (codings or Codings()).codebook]


# --------------------------------------------------------------------------- categories not offered


def _null_numbers(value):
    """``value`` with every number replaced by None (lists and dicts walked, other
    values such as the category names kept)."""
    if isinstance(value, dict):
        return {key: _null_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_null_numbers(item) for item in value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return None


def _slugs_null(shares: dict, slugs: Collection[str]) -> dict:
    return {key: None if key in slugs else share for key, share in shares.items()}


def not_offered(slugs: Sequence[str], offered: Collection[str]) -> list[str]:
    """The ``slugs`` (the study's categories) a stage offering ``offered`` did not."""
    return [slug for slug in slugs if slug not in offered]


def stage_categories_null(cell: dict, slugs: Sequence[str], offered: Collection[str]) -> dict:
    """A group × stage entry with the statistics of the categories its stage did not
    offer (``slugs`` are the study's, ``offered`` the stage's) null, their keys kept:
    nobody could choose them there, so a share of 0 or an agreement would be misread.
    In a stage that offers none (it asks no categories) every number of
    ``most_evident_error`` and ``category_sets`` is null too; otherwise that agreement is computed over the
    offered categories only. The coherent share and ``incoherent_unspecified`` stay."""
    missing = not_offered(slugs, offered)
    if not missing:
        return cell
    return {
        **cell,
        "error_categories": {
            slug: _null_numbers(entry) if slug in missing else entry
            for slug, entry in cell["error_categories"].items()
        },
        "label_distribution": {
            row: _slugs_null(shares, missing) for row, shares in cell["label_distribution"].items()
        },
        "most_evident_error": cell["most_evident_error"]
        if offered
        else _null_numbers(cell["most_evident_error"]),
        # (As a set of ticked categories: none can be ticked where none is offered.)
        **(
            {"category_sets": _null_numbers(cell["category_sets"])}
            if "category_sets" in cell and not offered
            else {}
        ),
    }


def _setting_null(entry: dict, missing: Collection[str], offered: Collection[str]) -> dict:
    def mee_null(shares: dict) -> dict:
        return _slugs_null(shares, missing) if offered else _null_numbers(shares)

    nulled = {
        **entry,
        "label_distribution": _slugs_null(entry["label_distribution"], missing),
        "majority_mee": mee_null(entry["majority_mee"]),
    }
    if "majority_mee_variants" in entry:
        nulled["majority_mee_variants"] = {
            name: mee_null(shares) for name, shares in entry["majority_mee_variants"].items()
        }
    return nulled


def generation_categories_null(
    settings: dict, slugs: Sequence[str], offered: Mapping[str, Collection[str]]
) -> dict:
    """``generation_settings`` with the shares of the categories a stage did not offer
    null (``offered``: stage → the slugs it offered; a stage not in it offered every
    one of ``slugs``): in the label distribution and the majority most evident
    error; in a stage that offers none, every majority most evident error share."""
    result = {}
    for group, per_stage in settings.items():
        result[group] = {}
        for stage, keys in per_stage.items():
            chosen = offered.get(stage, slugs)
            missing = not_offered(slugs, chosen)
            result[group][stage] = (
                {
                    key: {
                        value: _setting_null(entry, missing, chosen)
                        for value, entry in values.items()
                    }
                    for key, values in keys.items()
                }
                if missing
                else keys
            )
    return result


def crossed_categories_null(
    crossed: dict, slugs: Sequence[str], offered: Mapping[str, Collection[str]]
) -> dict:
    """``generation_crossed`` with the same shares null as
    :func:`generation_categories_null` nulls."""
    result = {}
    for group, per_stage in crossed.items():
        result[group] = {}
        for stage, entries in per_stage.items():
            chosen = offered.get(stage, slugs)
            missing = not_offered(slugs, chosen)
            result[group][stage] = (
                [_setting_null(entry, missing, chosen) for entry in entries] if missing else entries
            )
    return result
