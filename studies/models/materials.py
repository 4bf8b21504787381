"""Study materials: dialogue contexts, their reflections, and the batches that put
them before annotators."""

import hashlib
import json

from django.db import models
from django.db.models import F, Q
from django.db.models.functions import MD5

from ..limits import MATERIAL_TEXT_MAX_LENGTH, text_cap
from ..protocol import HUMAN_SOURCE
from ..validators import validate_generation_metadata, validate_turns
from .stages import Stage
from .study import Study


class DialogueContext(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="contexts")
    external_id = models.CharField(
        max_length=100, help_text="Id of the source dialogue (annomi_dialogue_id in exports)."
    )
    turns = models.JSONField(
        validators=[validate_turns],
        help_text='Oldest first: [{"role": "therapist"|"client", "text": "..."}, ...]',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "external_id"], name="context_external_id_unique"
            ),
            models.CheckConstraint(
                condition=~Q(external_id=""), name="context_external_id_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id


class Reflection(models.Model):
    class Kind(models.TextChoices):
        HUMAN = "human", "Human"
        SYNTHETIC = "synthetic", "Synthetic"
        ATTENTION_CHECK = "attention_check", "Attention check"

    context = models.ForeignKey(
        DialogueContext, on_delete=models.CASCADE, related_name="reflections"
    )
    text = models.TextField(max_length=MATERIAL_TEXT_MAX_LENGTH)
    source = models.CharField(
        max_length=100, help_text=f'"{HUMAN_SOURCE}" for the human reflection, else e.g. "GPT-2".'
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    generation = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_generation_metadata],
        help_text="model, decoding, p, prompt_type, complexity (simple/complex)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["context", "id"]
        constraints = [
            # On a hash of the text: PostgreSQL refuses an index row over 2,704 bytes,
            # so an index holding the text itself would refuse a long reflection.
            models.UniqueConstraint(
                F("context"),
                F("source"),
                MD5("text"),
                name="reflection_unique_in_context",
                violation_error_message="This context already has a reflection with this "
                "source and text.",
            ),
            models.UniqueConstraint(
                fields=["context"],
                condition=Q(kind="human"),
                name="reflection_one_human_per_context",
            ),
            models.CheckConstraint(condition=~Q(text=""), name="reflection_text_not_empty"),
            text_cap("reflection", "text", MATERIAL_TEXT_MAX_LENGTH),
            models.CheckConstraint(condition=~Q(source=""), name="reflection_source_not_empty"),
            models.CheckConstraint(
                condition=Q(kind__in=["human", "synthetic", "attention_check"]),
                name="reflection_kind_valid",
            ),
            # The source "Human" is the human reflection; every other is not.
            models.CheckConstraint(
                condition=Q(kind="human", source=HUMAN_SOURCE)
                | (~Q(kind="human") & ~Q(source=HUMAN_SOURCE)),
                name="reflection_human_kind_matches_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source}: {self.text[:60]}"


class Batch(models.Model):
    """One context's human, synthetic and attention-check reflections in one stage."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="batches")
    context = models.ForeignKey(DialogueContext, on_delete=models.CASCADE, related_name="batches")
    reflections = models.ManyToManyField(Reflection, through="BatchItem", related_name="batches")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "batches"
        ordering = ["stage", "context"]
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "context"], name="batch_one_per_stage_context"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stage.name} / {self.context.external_id}"


class BatchItem(models.Model):
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="items")
    reflection = models.ForeignKey(Reflection, on_delete=models.PROTECT, related_name="batch_items")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "reflection"], name="batch_item_unique"),
            models.UniqueConstraint(
                fields=["batch", "position"], name="batch_item_position_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.batch_id} #{self.position}"


def pool_candidate_key(source: str, text: str, generation: dict) -> str:
    """What tells two pool candidates of a context apart: the source, the text and the
    generation metadata (a null value counts as absent), hashed."""
    settings = {k: v for k, v in generation.items() if v is not None}
    raw = json.dumps([source, text, settings], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


class PoolCandidate(models.Model):
    """One generated candidate of a context's pool: not in any stage until a candidate
    selection (analysis.candidates) takes it as a cluster's representative. Two
    decoding settings may give the same text: the pool keeps both, and the selection
    removes the duplicates."""

    context = models.ForeignKey(
        DialogueContext, on_delete=models.CASCADE, related_name="pool_candidates"
    )
    text = models.TextField(max_length=MATERIAL_TEXT_MAX_LENGTH)
    source = models.CharField(max_length=100, help_text='The model, e.g. "GPT-4".')
    generation = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_generation_metadata],
        help_text="model, decoding, p, prompt_type, complexity (simple/complex)",
    )
    key = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["context", "id"]
        constraints = [
            models.UniqueConstraint(fields=["context", "key"], name="pool_candidate_unique"),
            models.CheckConstraint(condition=~Q(text=""), name="pool_candidate_text_not_empty"),
            text_cap("pool_candidate", "text", MATERIAL_TEXT_MAX_LENGTH),
            models.CheckConstraint(
                condition=~Q(source="") & ~Q(source=HUMAN_SOURCE),
                name="pool_candidate_source_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source}: {self.text[:60]}"
