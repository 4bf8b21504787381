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
