"""Annotations: assignments (and rejecting one) and judgements."""

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from ..api_framework import (
    MAX_ID,
    IdCursorPagination,
    PageNumberPagination,
    ResearcherApi,
    error_responses,
    paginated_response,
)
from ..models import Assignment, Reflection
from ..permissions import Capability, study_object_check
from ..protocol import selected_categories
from ..selectors import assignment_get, assignment_list, error_category_slugs, judgement_list
from ..services import assignment_reject
from .common import TAG_DATA, AssignmentSerializer, id_filter


class AssignmentListApi(ResearcherApi):
    """The study's assignments by id: who (pseudonym) has which batch, its status and
    timestamps, whether it recurs and whether the attention check passed."""

    may = Capability.READ_ROWS
    pagination_class = PageNumberPagination

    class FilterSerializer(serializers.Serializer):
        status = serializers.MultipleChoiceField(
            choices=Assignment.Status.choices,
            required=False,
            help_text="Repeat for several; omitted: every status.",
        )
        stage = id_filter(help_text="A stage id.")
        group = id_filter(help_text="An annotator group id.")

    @extend_schema(
        tags=TAG_DATA,
        summary="Assignments (one annotator's work on one batch)",
        parameters=[FilterSerializer],
        responses={200: AssignmentSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request, slug: str):
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        return paginated_response(
            paginator=self.pagination_class(),
            serializer_class=AssignmentSerializer,
            queryset=assignment_list(
                study=request.study,
                statuses=sorted(data.get("status") or ()),
                stage_id=data.get("stage"),
                group_id=data.get("group"),
            ),
            request=request,
            view=self,
        )


class AssignmentRejectApi(ResearcherApi):
    may = Capability.MANAGE_ANNOTATORS

    class InputSerializer(serializers.Serializer):
        # Blank passes here so that the service says what a rejection needs.
        reason = serializers.CharField(
            allow_blank=True,
            max_length=Assignment._meta.get_field("rejection_reason").max_length,
            help_text="Why (kept with the record).",
        )

        class Meta:
            ref_name = "AssignmentRejection"

    @extend_schema(
        tags=TAG_DATA,
        summary="Reject an assignment",
        description="Invalidates the work (its answers stay, marked rejected, and analysis "
        "leaves them out) and frees its slot for another annotator. Only assigned, "
        "in-progress or submitted work can be rejected. Needs a role in the assignment's "
        "study that may reject assignments (404 without a role there).",
        request=InputSerializer,
        responses={200: AssignmentSerializer, **error_responses(400, 401, 403, 404, 413, 415)},
    )
    def post(self, request, assignment_id: int):
        assignment = assignment_get(assignment_id=assignment_id)
        missing = f"No assignment {assignment_id}."
        if assignment is None:
            raise exceptions.NotFound(missing)
        study_object_check(request.user, assignment.stage.study_id, self.may, missing=missing)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        assignment_reject(
            assignment=assignment, reason=serializer.validated_data["reason"], by=request.user
        )
        return Response(AssignmentSerializer(assignment_get(assignment_id=assignment_id)).data)


class RatingSerializer(serializers.Serializer):
    dimension = serializers.CharField(source="dimension.name", help_text="The dimension's name.")
    scale = serializers.CharField(
        source="dimension.scale", help_text='The number of points, or "slider" (0–100).'
    )
    value = serializers.IntegerField(allow_null=True, help_text='Null: "cannot judge".')
    cannot_judge = serializers.BooleanField()

    class Meta:
        ref_name = "LikertRating"


class JudgementListApi(ResearcherApi):
    """One row per answer: the annotator's pseudonym, the reflection's source and kind,
    the answer (coherent, error categories, most evident error, the 1–5 rating; in a
    Likert stage its ratings; in a pairwise stage the pair and the choice; in a ranking
    stage the rank) and the time spent."""

    may = Capability.READ_ROWS
    pagination_class = IdCursorPagination

    class FilterSerializer(serializers.Serializer):
        stage = id_filter(help_text="A stage id.")
        group = id_filter(help_text="An annotator group id.")
        source = serializers.CharField(
            required=False,
            help_text='Reflection source, e.g. "Human", "GPT-2" (a pair: either candidate\'s).',
        )
        kind = serializers.ChoiceField(
            choices=Reflection.Kind.choices, required=False, help_text="Reflection kind."
        )
        annotator = serializers.CharField(required=False, help_text='Pseudonym, e.g. "Expert 4".')
        status = serializers.MultipleChoiceField(
            choices=Assignment.Status.choices,
            required=False,
            help_text="The assignment's status; repeat for several. Omitted: submitted only "
            "(the data the analysis reads).",
        )
        since_id = serializers.IntegerField(
            required=False,
            min_value=0,
            max_value=MAX_ID,
            help_text="Only judgements with a larger id (fetch what is new since last time).",
        )

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        assignment = serializers.IntegerField(source="assignment_id")
        assignment_status = serializers.ChoiceField(choices=Assignment.Status.choices)
        is_recurring = serializers.BooleanField(
            help_text="The annotator had judged this context in an earlier stage."
        )
        stage = serializers.IntegerField(source="stage_id")
        group = serializers.IntegerField(source="group_id")
        annotator = serializers.CharField(source="annotator_pseudonym", help_text="Pseudonym.")
        reflection = serializers.IntegerField(source="reflection_id")
        source = serializers.CharField()
        kind = serializers.ChoiceField(choices=Reflection.Kind.choices)
        coherent = serializers.BooleanField(
            allow_null=True,
            help_text="Null: an answer of another instrument (see ratings, choice, rank).",
        )
        categories = serializers.SerializerMethodField(
            help_text="Slugs of the selected error categories, in display order."
        )
        most_evident = serializers.SerializerMethodField(
            help_text="Slug of the most evident error, or null."
        )
        error_description = serializers.CharField(
            help_text="What is wrong, in the annotator's own words (a No in a stage that "
            "asks for a description); empty otherwise."
        )
        empathy = serializers.IntegerField(
            allow_null=True, help_text="1–5, answers Yes only (in stages that ask it)."
        )
        ratings = RatingSerializer(
            many=True,
            read_only=True,
            help_text="A Likert stage's answer: its rating on each dimension, in order "
            "(empty in a coherence stage).",
        )
        opponent = serializers.IntegerField(
            source="opponent_id",
            allow_null=True,
            help_text="A pairwise answer: the pair's second candidate (reflection is its "
            "first); null otherwise.",
        )
        opponent_source = serializers.CharField(allow_null=True)
        shown_swapped = serializers.BooleanField(
            help_text="A pairwise answer: the second candidate was shown on the left (as A)."
        )
        choice = serializers.CharField(
            help_text="A pairwise answer: A (the candidate shown on the left), B or Tie; "
            "empty otherwise."
        )
        reason = serializers.CharField(help_text="A pairwise answer's optional reason.")
        rank = serializers.IntegerField(
            allow_null=True,
            help_text="A ranking answer: the candidate's rank, 1 the best, tied candidates "
            "sharing the lowest rank of their tie; null otherwise.",
        )
        seconds_spent = serializers.FloatField(allow_null=True)
        created_at = serializers.DateTimeField()
        updated_at = serializers.DateTimeField()

        class Meta:
            ref_name = "Judgement"

        def get_categories(self, judgement) -> list[str]:
            return selected_categories(judgement.error_flags, self.context["categories"])

        def get_most_evident(self, judgement) -> str | None:
            if judgement.most_evident_bit is None:
                return None
            return dict(self.context["categories"]).get(judgement.most_evident_bit)

    @extend_schema(
        tags=TAG_DATA,
        summary="Judgements (cursor-paginated, oldest first)",
        description="Follow `next` until it is null to read every judgement exactly once; "
        "rows added meanwhile appear on later pages.",
        parameters=[FilterSerializer],
        responses={200: OutputSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request, slug: str):
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        study = request.study
        return paginated_response(
            paginator=self.pagination_class(),
            serializer_class=self.OutputSerializer,
            queryset=judgement_list(
                study=study,
                statuses=sorted(data.get("status") or Assignment.counted_statuses()),
                stage_id=data.get("stage"),
                group_id=data.get("group"),
                source=data.get("source"),
                kind=data.get("kind"),
                annotator=data.get("annotator"),
                since_id=data.get("since_id"),
            ),
            request=request,
            view=self,
            context={"categories": error_category_slugs(study_id=study.pk)},
        )
