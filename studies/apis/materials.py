"""Materials: contexts with their reflections, batches, and the materials import."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from ..api_framework import (
    ErrorSerializer,
    PageNumberPagination,
    ResearcherApi,
    error_responses,
    paginated_response,
    validation_error_response,
)
from ..datafiles.materials import MaterialsImportError, materials_import
from ..models import Reflection
from ..permissions import Capability
from ..selectors import batch_list, context_list
from .common import TAG_DATA, id_filter


class ContextListApi(ResearcherApi):
    """The dialogue contexts of the study, each with all its reflections (human,
    synthetic and attention checks), ordered by dialogue id."""

    pagination_class = PageNumberPagination

    class OutputSerializer(serializers.Serializer):
        class ReflectionSerializer(serializers.Serializer):
            id = serializers.IntegerField()
            kind = serializers.ChoiceField(choices=Reflection.Kind.choices)
            source = serializers.CharField(help_text='"Human", a model name, "Attention check".')
            text = serializers.CharField()
            generation = serializers.JSONField(
                help_text="Generation metadata (model, decoding...)."
            )

            class Meta:
                ref_name = "Reflection"

        class TurnSerializer(serializers.Serializer):
            role = serializers.ChoiceField(choices=["therapist", "client"])
            text = serializers.CharField()

            class Meta:
                ref_name = "Turn"

        id = serializers.IntegerField()
        external_id = serializers.CharField(help_text="The source dialogue's id.")
        turns = TurnSerializer(many=True, help_text="Oldest first.")
        reflections = ReflectionSerializer(many=True)
        created_at = serializers.DateTimeField()

        class Meta:
            ref_name = "DialogueContext"

    @extend_schema(
        tags=TAG_DATA,
        summary="Dialogue contexts with their reflections",
        responses={200: OutputSerializer(many=True), **error_responses(401, 403, 404)},
    )
    def get(self, request, slug: str):
        return paginated_response(
            paginator=self.pagination_class(),
            serializer_class=self.OutputSerializer,
            queryset=context_list(study=request.study),
            request=request,
            view=self,
        )


class BatchListApi(ResearcherApi):
    """One batch per context and stage: the reflection ids in the batch's stored order
    (annotators each see their own shuffle)."""

    pagination_class = PageNumberPagination

    class FilterSerializer(serializers.Serializer):
        stage = id_filter(help_text="A stage id: only that stage's batches.")

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        stage = serializers.IntegerField(source="stage_id")
        context = serializers.CharField(
            source="context_external_id", help_text="The context's dialogue id."
        )
        context_id = serializers.IntegerField()
        reflections = serializers.SerializerMethodField(help_text="Reflection ids in batch order.")

        class Meta:
            ref_name = "Batch"

        def get_reflections(self, batch) -> list[int]:
            return [item.reflection_id for item in batch.items.all()]

    @extend_schema(
        tags=TAG_DATA,
        summary="Batches (one per context and stage)",
        parameters=[FilterSerializer],
        responses={200: OutputSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request, slug: str):
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        return paginated_response(
            paginator=self.pagination_class(),
            serializer_class=self.OutputSerializer,
            queryset=batch_list(study=request.study, stage_id=filters.validated_data.get("stage")),
            request=request,
            view=self,
        )


class MaterialsImportApi(ResearcherApi):
    """The materials JSON document of ``manage.py import_materials`` and the admin's
    import page, checked and written by the same importer: all or nothing."""

    may = Capability.CONFIGURE

    class DocumentSerializer(serializers.Serializer):
        """For the schema only: the importer itself checks the document."""

        class ContextSerializer(serializers.Serializer):
            class TurnSerializer(serializers.Serializer):
                role = serializers.ChoiceField(choices=["therapist", "client"])
                text = serializers.CharField()

                class Meta:
                    ref_name = "MaterialsTurn"

            class SyntheticSerializer(serializers.Serializer):
                stage = serializers.CharField(help_text="A stage name of the study.")
                source = serializers.CharField(help_text='e.g. "GPT-2"; not "Human".')
                text = serializers.CharField()
                generation = serializers.DictField(
                    required=False,
                    help_text="model, decoding, p, prompt_type, complexity (all optional).",
                )

                class Meta:
                    ref_name = "MaterialsSyntheticReflection"

            class AttentionCheckSerializer(serializers.Serializer):
                stage = serializers.CharField(
                    required=False, help_text="Omitted: the check of every stage's batch."
                )
                text = serializers.CharField()

                class Meta:
                    ref_name = "MaterialsAttentionCheck"

            id = serializers.CharField(help_text="The source dialogue's id.")
            turns = TurnSerializer(
                many=True,
                help_text='Oldest first; the published [{"client": "..."}] shape works too.',
            )
            human_reflection = serializers.CharField()
            synthetic = SyntheticSerializer(many=True)
            attention_checks = AttentionCheckSerializer(
                many=True,
                required=False,
                help_text="Omitted: an off-topic check is taken from another dialogue.",
            )

            class Meta:
                ref_name = "MaterialsContext"

        contexts = ContextSerializer(many=True)

        class Meta:
            ref_name = "MaterialsDocument"

    class OutputSerializer(serializers.Serializer):
        message = serializers.CharField()
        changed = serializers.BooleanField(help_text="False: the study already held exactly this.")
        contexts_created = serializers.IntegerField()
        reflections_created = serializers.IntegerField()
        reflections_updated = serializers.IntegerField(help_text="Generation metadata replaced.")
        batches_created = serializers.IntegerField()
        batches_updated = serializers.IntegerField()
        attention_checks_generated = serializers.IntegerField()
        pool_candidates_created = serializers.IntegerField(
            help_text="With pool=true: the candidates added to the contexts' pools."
        )

        class Meta:
            ref_name = "MaterialsImportSummary"

    class IssuesSerializer(ErrorSerializer):
        class IssueSerializer(serializers.Serializer):
            where = serializers.CharField(help_text="Context index and id, and field.")
            message = serializers.CharField()

            class Meta:
                ref_name = "MaterialsIssue"

        errors = serializers.DictField(
            child=serializers.ListField(child=serializers.CharField()),
            help_text='{"materials": ["<where>: <problem>", ...]}: the first 50 in row order, '
            'then "... and N more".',
        )
        issues = IssueSerializer(many=True, required=False)

        class Meta:
            ref_name = "MaterialsImportError"

    @extend_schema(
        tags=TAG_DATA,
        summary="Import materials (the JSON of the materials import)",
        description="All or nothing: every problem is listed in one 400 and nothing is "
        "written. Importing the same document again changes nothing (200). With "
        "pool=true the synthetic reflections are each context's candidate pool, in no "
        "stage, for a candidate selection to choose from.",
        parameters=[
            OpenApiParameter(
                "pool",
                bool,
                description="The synthetic reflections are candidate pools (their stage "
                "left out). Default: false.",
            )
        ],
        request=DocumentSerializer,
        responses={
            201: OpenApiResponse(OutputSerializer, "Imported."),
            200: OpenApiResponse(OutputSerializer, "Nothing to change."),
            400: OpenApiResponse(IssuesSerializer, "Nothing imported: the problems."),
            **error_responses(401, 403, 404, 413, 415),
        },
    )
    def post(self, request, slug: str):
        study = request.study
        # The importer parses the raw body itself, so its rules and messages (line and
        # column, numbers PostgreSQL cannot store...) are those of every other import.
        media_type = request.content_type.split(";")[0].strip().lower()
        if request.body and media_type != "application/json":
            raise exceptions.UnsupportedMediaType(request.content_type)
        pool = request.query_params.get("pool", "false").lower()
        if pool not in ("true", "false"):
            return validation_error_response(
                message="Nothing was imported: pool is true or false.",
                errors={"pool": [f"pool is true or false, not {pool[:20]!r}."]},
            )
        try:
            summary = materials_import(
                study=study, content=request.body, fmt="json", pool=pool == "true"
            )
        except MaterialsImportError as exc:
            return validation_error_response(
                message=f"Nothing was imported: the document has {exc.total} problem(s).",
                errors={"materials": exc.lines()},
                issues=[{"where": p.where, "message": p.message} for p in exc.problems],
            )
        data = {
            "message": str(summary),
            "changed": summary.changed,
            "contexts_created": summary.contexts_created,
            "reflections_created": summary.reflections_created,
            "reflections_updated": summary.reflections_updated,
            "batches_created": summary.batches_created,
            "batches_updated": summary.batches_updated,
            "attention_checks_generated": summary.attention_checks_generated,
            "pool_candidates_created": summary.pool_candidates_created,
        }
        return Response(self.OutputSerializer(data).data, status=201 if summary.changed else 200)
