"""The base of the import commands (``import_materials``, ``import_annotations``,
``import_scores``): the same checks of the study and the file, and the same report
of a refused file."""

from collections.abc import Callable
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ..models import Study
from .problems import DataFileError


class DataFileImportCommand(BaseCommand):
    def study_or_error(self, slug: str) -> Study:
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{slug}".')
        return study

    def file_or_error(self, path: str) -> Path:
        file = Path(path)
        if not file.is_file():
            raise CommandError(f"No such file: {path}")
        return file

    def run_import(self, file: Path, do_import: Callable[[], object]) -> None:
        """Call ``do_import`` and print its summary; a refused file becomes a
        CommandError listing its problems."""
        try:
            summary = do_import()
        except DataFileError as exc:
            raise CommandError(exc.report(file.name)) from None
        self.stdout.write(self.style.SUCCESS(str(summary)))
