"""Free-text descriptions of what is wrong, and their coding into a codebook.

* :func:`code_matrix`: one coder's codings as a description × code table;
* :func:`binary_kappa`: Cohen's kappa of two coders on one code (present / absent);
* :func:`description_summary`: per group and stage, how many "No" answers carry a
  description, what the primary coder found in them (overall and per source) and how
  far a second coder agrees with the primary one, code by code.

Codings come in long form, one row per (description, coder, code): ``judgement_id``,
``coder`` (:data:`PRIMARY` or :data:`SECOND`), ``uninformative`` and ``code`` (the
code's slug; missing for a coding without codes). Vectorised pandas; no Django.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa

from .._common import clean

PRIMARY = "primary"
SECOND = "second"
CODING_COLUMNS = ("judgement_id", "coder", "uninformative", "code")


def no_codings() -> pd.DataFrame:
    """The codings of a study nobody has coded yet."""
    return pd.DataFrame({column: pd.Series(dtype=object) for column in CODING_COLUMNS})


def code_matrix(codings: pd.DataFrame, *, coder: str, codes: Sequence[str]) -> pd.DataFrame:
    """``coder``'s codings: one row per description they coded (indexed by judgement
    id, sorted), one boolean column per code of ``codes`` (in that order) and
    ``uninformative``. A code outside ``codes`` is ignored."""
    codes = list(codes)
    rows = codings.loc[codings["coder"] == coder]
    ids, row_of = np.unique(rows["judgement_id"].to_numpy(dtype=np.int64), return_inverse=True)
    column_of = pd.Index(codes, dtype=object).get_indexer(rows["code"])
    present = np.zeros((len(ids), len(codes)), dtype=bool)
    known = column_of >= 0
    present[row_of[known], column_of[known]] = True
    uninformative = np.zeros(len(ids), dtype=bool)
    np.logical_or.at(uninformative, row_of, rows["uninformative"].fillna(False).to_numpy(bool))
    matrix = pd.DataFrame(present, index=pd.Index(ids, name="judgement_id"), columns=codes)
    matrix["uninformative"] = uninformative
    return matrix


def binary_kappa(first: np.ndarray, second: np.ndarray) -> float | None:
    """Cohen's kappa of two coders' present/absent decisions on the same descriptions
    (``statsmodels``' ``cohens_kappa`` on the 2 × 2 table). None without descriptions,
    or when either coder gave the same decision on every one (never or always used
    the code): agreement beyond chance then says nothing."""
    first = np.asarray(first, dtype=bool)
    second = np.asarray(second, dtype=bool)
    if len(first) == 0:
        return None
    if first.all() or not first.any() or second.all() or not second.any():
        return None
    table = np.array(
        [
            [np.sum(first & second), np.sum(first & ~second)],
            [np.sum(~first & second), np.sum(~first & ~second)],
        ]
    )
    return clean(cohens_kappa(table).kappa)


def _shares(matrix: pd.DataFrame, codes: list[str]) -> dict[str, float | None]:
    if matrix.empty:
        return dict.fromkeys(codes)
    return {code: clean(share) for code, share in matrix[codes].mean().items()}


def description_summary(
    *,
    judgements: pd.DataFrame,
    codings: pd.DataFrame,
    codes: Sequence[str],
    source: str = "source",
) -> dict:
    """The ``descriptions`` entry of one group × stage.

    ``judgements`` are the cell's analysed judgements (``judgement_id``, ``coherent``,
    ``described``: the answer has a description, and ``source``); ``codings`` the
    study's codings (any judgements: those of the cell's described judgements count),
    ``codes`` the codebook's slugs.

    * ``n``: judgements with a description; ``n_incoherent``: "No" answers;
      ``coverage`` = n ÷ n_incoherent (None without a No).
    * ``n_coded``: descriptions the primary coder coded; ``n_uninformative``: of those,
      set aside as saying nothing specific.
    * ``codes``: per code, the share of the primary coder's informative codings that
      carry it (a description may carry several: shares may sum above 1; None without
      an informative coding); ``codes_by_source``: the same per source of the cell.
    * ``coder_agreement``: per code, :func:`binary_kappa` between the primary and the
      second coder over ``n_both_coded``, the descriptions both coded (an
      uninformative coding has every code absent).
    """
    codes = list(codes)
    described = (
        judgements["described"].fillna(False).astype(bool)
        if "described" in judgements
        else pd.Series(False, index=judgements.index)
    )
    n = int(described.sum())
    n_incoherent = int((~judgements["coherent"].astype(bool)).sum())
    ids = judgements.loc[described, "judgement_id"].to_numpy(dtype=np.int64)
    in_cell = codings.loc[codings["judgement_id"].isin(ids)]
    primary = code_matrix(in_cell, coder=PRIMARY, codes=codes)
    second = code_matrix(in_cell, coder=SECOND, codes=codes)
    informative = primary.loc[~primary["uninformative"]]
    sources = judgements.set_index("judgement_id")[source]
    by_source = informative[codes].groupby(sources.reindex(informative.index).to_numpy()).mean()
    both = primary.index.intersection(second.index)
    first_both, second_both = primary.loc[both], second.loc[both]
    return {
        "n": n,
        "n_incoherent": n_incoherent,
        "coverage": n / n_incoherent if n_incoherent else None,
        "n_coded": len(primary),
        "n_uninformative": int(primary["uninformative"].sum()),
        "codes": _shares(informative, codes),
        "codes_by_source": {
            str(name): {
                code: clean(by_source.at[name, code]) if name in by_source.index else None
                for code in codes
            }
            for name in sorted(sources.unique(), key=str)
        },
        "coder_agreement": {
            code: binary_kappa(first_both[code].to_numpy(), second_both[code].to_numpy())
            for code in codes
        },
        "n_both_coded": len(both),
    }
