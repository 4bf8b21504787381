"""What an import of published annotations created, as the command and the admin say it."""

from dataclasses import dataclass

from .columns import GATE_COLUMN


@dataclass(frozen=True)
class AnnotationsImportSummary:
    study_slug: str
    stages: int
    groups: int
    annotators: int
    contexts: int
    reflections: int
    batches: int
    assignments: int
    judgements: int
    overlap_k: int
    batches_per_stage: int
    ignored_columns: tuple[str, ...] = ()
    #: The Likert format's ratings (its judgements each hold one per dimension rated).
    ratings: int | None = None

    def __str__(self) -> str:
        text = (
            f'Created the closed study "{self.study_slug}": {self.stages} stages, '
            f"{self.groups} groups, {self.annotators} annotators, {self.contexts} contexts, "
            f"{self.reflections} reflections, {self.batches} batches, "
            f"{self.assignments} assignments, {self.judgements} judgements"
            + (f" with {self.ratings} Likert ratings" if self.ratings is not None else "")
            + f" (k = {self.overlap_k}, m = {self.batches_per_stage})."
        )
        if self.ignored_columns:
            text += f" Ignored columns: {', '.join(self.ignored_columns)}."
        if f"'{GATE_COLUMN}'" in self.ignored_columns:  # as the header check names it
            text += (
                " (The gate column says which gate let each item into its stage; an "
                "imported study has no gates: its stages hold the items as the file has them.)"
            )
        return text
