"""The pairs of a pairwise stage's batches: built from each batch's candidates with the
study's seed (``protocol.context_pairs``), never stored, so they follow the batch's
reflections (locked once the batch is handed out) and the stage's settings (locked
once annotators work in it), and an audit recomputes them."""

from ..models import Batch, BatchItem, Reflection, Stage
from ..protocol import context_pairs


def pairs_seed(*, seed: int, stage_position: int, dialogue: str) -> str:
    """The seed of one batch's pairs and of the sides they are shown on."""
    return f"{seed}/pairs/{stage_position}/{dialogue}"


def stage_batch_pairs(*, stage: Stage, batch_ids=None) -> dict[int, list[tuple[int, int]]]:
    """Batch id → its pairs ``(first, second)``, for every batch of ``stage`` (or
    those of ``batch_ids``); empty for a stage of another instrument."""
    if not stage.answer_settings.compares_pairs:
        return {}
    items = BatchItem.objects.filter(batch__stage=stage)
    if batch_ids is not None:
        items = items.filter(batch_id__in=list(batch_ids))
    rows = items.order_by("batch_id", "position").values_list(
        "batch_id",
        "batch__context__external_id",
        "reflection_id",
        "reflection__source",
        "reflection__kind",
    )
    batches: dict[int, tuple[str, list, list]] = {}
    for batch_id, dialogue, reflection_id, source, kind in rows:
        _, candidates, attention = batches.setdefault(batch_id, (dialogue, [], []))
        if kind == Reflection.Kind.ATTENTION_CHECK:
            attention.append(reflection_id)
        else:
            candidates.append((reflection_id, source))
    seed = stage.study.seed
    return {
        batch_id: context_pairs(
            candidates,
            attention_id=attention[0] if attention else None,
            per_context=stage.pairs_per_context,
            seed=pairs_seed(seed=seed, stage_position=stage.position, dialogue=dialogue),
        )
        for batch_id, (dialogue, candidates, attention) in batches.items()
    }


def batch_pairs(*, batch: Batch) -> list[tuple[int, int]]:
    """One batch's pairs (``stage_batch_pairs``)."""
    return stage_batch_pairs(stage=batch.stage, batch_ids=[batch.pk]).get(batch.pk, [])
