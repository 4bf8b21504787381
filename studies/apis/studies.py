"""Studies, their configuration and their progress."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from ..api_framework import (
    PageNumberPagination,
    ResearcherApi,
    error_responses,
    paginated_response,
)
from ..models import Study
from ..permissions import Capability, rows_where
from ..selectors import (
    group_list,
    stage_list,
    studies_with_configuration,
    study_list,
    study_progress,
)
from ..services import study_open
from .common import (
    TAG_STUDIES,
    CategorySerializer,
    GroupSerializer,
    SecondsField,
    StageSerializer,
)


class StudyListApi(ResearcherApi):
    """The studies the caller's role lets them see, newest first."""

    pagination_class = PageNumberPagination

    class OutputSerializer(serializers.Serializer):
        slug = serializers.CharField()
        title = serializers.CharField()
        status = serializers.ChoiceField(choices=Study.Status.choices)
        overlap_k = serializers.IntegerField(help_text="Annotators per batch per group (k).")
        batches_per_stage = serializers.IntegerField(
            help_text="Batches per annotator per stage (m)."
        )
        created_at = serializers.DateTimeField()
        updated_at = serializers.DateTimeField()

        class Meta:
            ref_name = "StudySummary"

    @extend_schema(
        tags=TAG_STUDIES,
        summary="List studies",
        responses={200: OutputSerializer(many=True), **error_responses(401, 403, 404)},
    )
    def get(self, request):
        return paginated_response(
            paginator=self.pagination_class(),
            serializer_class=self.OutputSerializer,
            queryset=rows_where(study_list(), request.user, Capability.SEE, "pk"),
            request=request,
            view=self,
        )


class StudyDetailApi(ResearcherApi):
    """One study with its protocol settings (k, m, time limit, attention-check policy),
    stages in order, annotator groups and error categories."""

    class OutputSerializer(StudyListApi.OutputSerializer):
        description = serializers.CharField()
        batch_time_limit_seconds = SecondsField(source="batch_time_limit")
        avoid_recurrence = serializers.BooleanField()
        attention_failure_policy = serializers.ChoiceField(choices=Study.AttentionPolicy.choices)
        seed = serializers.IntegerField(help_text="Seeds every random choice of the study.")
        stages = StageSerializer(many=True)
        groups = GroupSerializer(many=True)
        categories = CategorySerializer(many=True, help_text="Error categories, in display order.")

        class Meta:
            ref_name = "Study"

    def study_queryset(self):
        return studies_with_configuration()

    @extend_schema(
        tags=TAG_STUDIES,
        summary="A study with its stages, groups and error categories",
        responses={200: OutputSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request, slug: str):
        return Response(self.OutputSerializer(request.study).data)


class StudyOpenApi(ResearcherApi):
    """Open the study to annotators. Refused (400, listing what is missing, nothing
    changed) while annotators would lack something: the rule of the admin's study page."""

    may = Capability.CONFIGURE

    @extend_schema(
        tags=TAG_STUDIES,
        summary="Open a study to annotators",
        description="Needs the information sheet, consent text, tutorial, at least one "
        "stage and group, defined error categories and materials in every stage; the 400 "
        "lists what is missing. Opening an open study changes nothing.",
        request=None,
        responses={200: StudyListApi.OutputSerializer, **error_responses(400, 401, 403, 404)},
    )
    def post(self, request, slug: str):
        study = study_open(study=request.study)
        return Response(StudyListApi.OutputSerializer(study).data)


class StageListApi(ResearcherApi):
    """The stages of the study in the order annotators do them."""

    @extend_schema(
        tags=TAG_STUDIES,
        summary="The study's stages, in order",
        responses={200: StageSerializer(many=True), **error_responses(401, 403, 404)},
    )
    def get(self, request, slug: str):
        return Response(StageSerializer(stage_list(study=request.study), many=True).data)


class GroupListApi(ResearcherApi):
    """The annotator groups of the study (e.g. Layperson, Expert)."""

    @extend_schema(
        tags=TAG_STUDIES,
        summary="The study's annotator groups",
        responses={200: GroupSerializer(many=True), **error_responses(401, 403, 404)},
    )
    def get(self, request, slug: str):
        return Response(GroupSerializer(group_list(study=request.study), many=True).data)


class ProgressApi(ResearcherApi):
    """Per stage and group: assignments by status, batches with all k slots submitted,
    and judgements counted. Computed with aggregate queries at request time."""

    class OutputSerializer(serializers.Serializer):
        class StageSerializer(serializers.Serializer):
            class GroupCellSerializer(serializers.Serializer):
                class StatusCountSerializer(serializers.Serializer):
                    assigned = serializers.IntegerField()
                    in_progress = serializers.IntegerField()
                    submitted = serializers.IntegerField()
                    expired = serializers.IntegerField()
                    rejected = serializers.IntegerField()

                    class Meta:
                        ref_name = "AssignmentStatusCounts"

                id = serializers.IntegerField(source="group_id")
                name = serializers.CharField()
                slots = serializers.IntegerField(help_text="Batches × k.")
                assignments = StatusCountSerializer(help_text="Assignments by status.")
                batches_complete = serializers.IntegerField(
                    help_text="Batches with k submitted assignments of this group."
                )
                judgements = serializers.IntegerField(
                    help_text="Judgements of submitted assignments, attention checks left "
                    "out (what the analysis reads)."
                )
                judgements_stored = serializers.IntegerField(
                    help_text="Every stored judgement, whatever its assignment's status."
                )
                annotators = serializers.IntegerField(help_text="The group's annotators.")
                without_work = serializers.IntegerField(
                    help_text="Annotators of the group who can no longer get work in this "
                    "stage (fewer than m batches, and no batch left that can be theirs)."
                )
                annotators_needed = serializers.IntegerField(
                    help_text="More annotators needed to fill the open slots."
                )
                takes_part = serializers.BooleanField(
                    help_text="The group takes part in this stage (else its slots are 0)."
                )

                class Meta:
                    ref_name = "GroupProgress"

            id = serializers.IntegerField(source="stage_id")
            name = serializers.CharField()
            position = serializers.IntegerField()
            batches = serializers.IntegerField()
            batches_complete = serializers.IntegerField(
                help_text="Batches with k submitted assignments in every group taking part."
            )
            k = serializers.IntegerField(help_text="The stage's k: its own, else the study's.")
            m = serializers.IntegerField(help_text="The stage's m: its own, else the study's.")
            groups = GroupCellSerializer(many=True)

            class Meta:
                ref_name = "StageProgress"

        study = serializers.CharField(help_text="The study's slug.")
        overlap_k = serializers.IntegerField()
        batches_per_stage = serializers.IntegerField()
        stages = StageSerializer(many=True)

        class Meta:
            ref_name = "Progress"

    @extend_schema(
        tags=TAG_STUDIES,
        summary="Progress per stage and group",
        responses={200: OutputSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request, slug: str):
        study = request.study
        progress = study_progress(study=study)
        data = {
            "study": study.slug,
            "overlap_k": progress.overlap_k,
            "batches_per_stage": progress.batches_per_stage,
            "stages": progress.stages,
        }
        return Response(self.OutputSerializer(data).data)
