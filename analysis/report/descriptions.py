"""The report's free-text keys: ``codebook`` and ``descriptions`` (per group and
stage, the descriptions given with a "No", their coding into the study's codebook
and the agreement of two coders), and the null category statistics of a stage that
asks for descriptions instead of categories.

This module only slices the analysed frame (the judgements every other block reads)
and names the results; the statistics live in
:mod:`analysis.metrics.protocol.descriptions`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


# --------------------------------------------------------------------------- free-text stages


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


def _slugs_null(shares: dict, slugs: Sequence[str]) -> dict:
    return {key: None if key in slugs else share for key, share in shares.items()}


def stage_categories_null(cell: dict, slugs: Sequence[str]) -> dict:
    """A group × stage entry of a stage that asks no categories: its category
    statistics keep their keys, with null values (no annotator was asked, so a share
    of 0 or an agreement would be misread). The coherent share and
    ``incoherent_unspecified`` (the "No" answers, none with a category) stay."""
    return {
        **cell,
        "error_categories": _null_numbers(cell["error_categories"]),
        "label_distribution": {
            row: _slugs_null(shares, slugs) for row, shares in cell["label_distribution"].items()
        },
        "most_evident_error": _null_numbers(cell["most_evident_error"]),
    }


def generation_categories_null(settings: dict, slugs: Sequence[str], stages: Sequence[str]) -> dict:
    """``generation_settings`` with the category shares of ``stages`` (those asking no
    categories) null: the label distribution's categories and every majority most
    evident error share."""
    result = {}
    for group, per_stage in settings.items():
        result[group] = {
            stage: {
                key: {
                    value: {
                        **entry,
                        "label_distribution": _slugs_null(entry["label_distribution"], slugs),
                        "majority_mee": _null_numbers(entry["majority_mee"]),
                    }
                    for value, entry in values.items()
                }
                for key, values in keys.items()
            }
            if stage in stages
            else keys
            for stage, keys in per_stage.items()
        }
    return result
