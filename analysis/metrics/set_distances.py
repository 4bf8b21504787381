"""Distances between sets of labels, for Krippendorff's alpha on the whole set of
categories an annotator ticked (Passonneau 2006).

* Jaccard: 1 − |A ∩ B| / |A ∪ B|.
* MASI (Measuring Agreement on Set-valued Items): 1 − |A ∩ B| / |A ∪ B| × M, where the
  monotonicity M is 1 when the sets are equal, 2/3 when one holds the other, 1/3
  when they overlap otherwise and 0 when they are disjoint (Passonneau's weights, as
  NLTK's ``masi_distance`` has them; tests check every value against it).

Sets are rows of a boolean membership matrix (sets × labels), so a study's distinct
sets give their whole distance matrix in a few array operations. Every set must be
non-empty: an empty set has no union with another empty one.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

SetDistance = Literal["masi", "jaccard"]

#: The set distances the report computes alpha with, in the order it shows them.
SET_DISTANCES: tuple[SetDistance, ...] = ("masi", "jaccard")

#: MASI's monotonicity weights: one set holds the other, the sets overlap otherwise.
MASI_SUBSET = 2 / 3
MASI_OVERLAP = 1 / 3


def set_distance_matrix(members: np.ndarray, metric: SetDistance) -> np.ndarray:
    """Sets × sets distances between the rows of ``members`` (sets × labels, true
    where the set holds the label)."""
    members = np.asarray(members, dtype=bool)
    if members.ndim != 2:
        raise ValueError("members is a sets × labels matrix")
    sizes = members.sum(axis=1)
    if (sizes == 0).any():
        raise ValueError("every set needs at least one label")
    as_int = members.astype(np.int64)
    shared = as_int @ as_int.T
    union = sizes[:, None] + sizes[None, :] - shared
    overlap = shared / union
    if metric == "jaccard":
        return 1.0 - overlap
    if metric == "masi":
        equal = (shared == sizes[:, None]) & (shared == sizes[None, :])
        nested = shared == np.minimum(sizes[:, None], sizes[None, :])
        monotonicity = np.select(
            [equal, nested, shared > 0], [1.0, MASI_SUBSET, MASI_OVERLAP], default=0.0
        )
        return 1.0 - overlap * monotonicity
    raise ValueError(f"unknown set distance {metric!r}")
