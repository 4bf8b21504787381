from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "analysis"
    verbose_name = "Analysis"

    def ready(self):
        # The full export (studies, a layer below) gets the annotator-quality columns.
        from studies.exports.annotator_columns import annotator_columns_register

        from .export_columns import QUALITY_COLUMNS

        annotator_columns_register(QUALITY_COLUMNS)

        # After an import, the candidates' embeddings are computed on the worker, ahead
        # of the reports that read them.
        from studies.signals import materials_written

        from .services import candidate_embeddings_request

        materials_written.connect(
            candidate_embeddings_request, dispatch_uid="analysis.candidate_embeddings"
        )
