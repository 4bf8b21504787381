"""Shared by the study API modules: id filters, durations and the output shapes several
endpoints return. (The study of the URL is ``request.study``: ``ResearcherPermission``.)"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..api_framework import MAX_ID
from ..models import Assignment

TAG_STUDIES = ["studies"]
TAG_DATA = ["materials and annotations"]


def id_filter(**kwargs):
    return serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID, **kwargs)


@extend_schema_field(OpenApiTypes.DOUBLE)
class SecondsField(serializers.Field):
    """A duration as a number of seconds."""

    def to_representation(self, value):
        return value.total_seconds()


# --- shared output shapes --------------------------------------------------------------------


class StageGroupWaitSerializer(serializers.Serializer):
    group = serializers.IntegerField(source="group_id", help_text="The group's id.")
    min_wait_seconds = SecondsField(source="min_wait", help_text="Its wait before the stage.")

    class Meta:
        ref_name = "StageGroupWait"


class StageSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField(help_text="1, 2, ...: annotators do stages in order.")
    name = serializers.CharField()
    min_wait_seconds = SecondsField(
        source="min_wait", help_text="Minimum wait before an annotator may start this stage."
    )
    overlap_k = serializers.IntegerField(
        source="k", help_text="Annotators per batch per group: the stage's own, else the study's."
    )
    batches_per_stage = serializers.IntegerField(
        source="m", help_text="Batches per annotator: the stage's own, else the study's."
    )
    groups = serializers.SerializerMethodField(
        help_text="Ids of the groups taking part; empty: every group."
    )
    group_waits = StageGroupWaitSerializer(
        many=True,
        help_text="Groups with a wait of their own before this stage (the others wait "
        "min_wait_seconds).",
    )

    class Meta:
        ref_name = "Stage"

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_groups(self, stage) -> list[int]:
        return [group.pk for group in stage.groups.all()]


class GroupSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    pseudonym_prefix = serializers.CharField(help_text='Annotators are "<prefix> <number>".')

    class Meta:
        ref_name = "AnnotatorGroup"


class CategorySerializer(serializers.Serializer):
    slug = serializers.CharField()
    label = serializers.CharField()
    definition = serializers.CharField()
    order = serializers.IntegerField()

    class Meta:
        ref_name = "ErrorCategory"


class AssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    batch = serializers.IntegerField(source="batch_id")
    stage = serializers.IntegerField(source="stage_id")
    group = serializers.IntegerField(source="group_id")
    annotator = serializers.CharField(source="annotator_pseudonym", help_text="Pseudonym.")
    status = serializers.ChoiceField(choices=Assignment.Status.choices)
    is_recurring = serializers.BooleanField(
        help_text="The annotator had judged this context in an earlier stage."
    )
    attention_passed = serializers.BooleanField(allow_null=True)
    assigned_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    submitted_at = serializers.DateTimeField(allow_null=True)
    expired_at = serializers.DateTimeField(allow_null=True)
    rejected_at = serializers.DateTimeField(allow_null=True)
    rejection_reason = serializers.CharField()

    class Meta:
        ref_name = "Assignment"
