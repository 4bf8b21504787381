"""A candidate selection's parameters, their defaults and their one check."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..models import TextEmbedding
from . import clustering
from .embeddings import DEFAULT_MODEL

#: Self-BLEU of a pool is scored on this many pairs per context by default (a pool of
#: 150 candidates has 22,350); a selection's pairs are all scored.
DEFAULT_POOL_PAIRS = 200
MAX_PER_CONTEXT = 100
MODEL_NAME_MAX_LENGTH = TextEmbedding._meta.get_field("model").max_length


@dataclass(frozen=True)
class SelectionParameters:
    model: str = DEFAULT_MODEL
    threshold: float = 0.7
    metric: str = "cosine"
    linkage: str = "average"
    per_context: int = 9
    stratify_by: str = ""
    pool_pairs_per_context: int | None = DEFAULT_POOL_PAIRS

    @classmethod
    def from_dict(cls, data: dict) -> SelectionParameters:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def as_dict(self) -> dict:
        return asdict(self)

    def problems(self) -> dict[str, str]:
        """Field → message for each value the selection cannot take."""
        found = {}
        if not self.model.strip():
            found["model"] = "Name the embedding model (or keep the default)."
        elif len(self.model) > MODEL_NAME_MAX_LENGTH:
            found["model"] = (
                f"A model's name or folder has at most {MODEL_NAME_MAX_LENGTH} characters."
            )
        if not self.threshold > 0:
            found["threshold"] = "The distance threshold is a number above 0."
        if self.metric not in clustering.METRICS:
            found["metric"] = f"The distance is one of {', '.join(clustering.METRICS)}."
        if self.linkage not in clustering.LINKAGES:
            found["linkage"] = f"The linkage is one of {', '.join(clustering.LINKAGES)}."
        elif self.linkage == "ward" and self.metric != "euclidean":
            found["linkage"] = "Ward linkage works with the euclidean distance only."
        if not 1 <= self.per_context <= MAX_PER_CONTEXT:
            found["per_context"] = f"Draw 1 to {MAX_PER_CONTEXT} clusters per context."
        if self.pool_pairs_per_context is not None and self.pool_pairs_per_context < 1:
            found["pool_pairs_per_context"] = "Score at least one pair per context, or all."
        return found
