from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from studies.datafiles.commands import DataFileImportCommand
from studies.definition import definition_parse, study_import_definition
from studies.permissions import user_may_create_studies


class Command(BaseCommand):
    help = (
        "Create a new draft study from a study definition file (YAML or JSON, as "
        "export_study writes it). All or nothing: a file with any mistake is refused, "
        "each mistake named by where it is, and nothing is written. Materials are "
        "imported afterwards (import_materials)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--slug", help="The new study's slug (default: the file's).")
        parser.add_argument("--title", help="The new study's title (default: the file's).")
        parser.add_argument(
            "--by",
            metavar="USERNAME",
            help="The account creating it, who becomes its owner; refused unless it may "
            "create studies.",
        )

    def handle(self, *args, path, slug, title, by, **options):
        file = DataFileImportCommand().file_or_error(path)
        user = None
        if by:
            user = get_user_model().objects.filter(username=by).first()
            if user is None:
                raise CommandError(f'No account "{by}".')
            if not user_may_create_studies(user):
                raise CommandError(f'"{by}" may not create studies. Nothing imported.')
        try:
            data = definition_parse(file.read_text(encoding="utf-8"))
            study = study_import_definition(data, user=user, slug=slug, title=title)
        except UnicodeDecodeError:
            raise CommandError(f"{file.name}: not a UTF-8 text file. Nothing imported.") from None
        except ValidationError as exc:
            problems = "\n".join(f"  {message}" for message in exc.messages)
            raise CommandError(
                f"{file.name} was not imported (nothing was written):\n{problems}"
            ) from None
        self.stdout.write(
            f'Created the draft study "{study.title}" ({study.slug}) with '
            f"{study.stages.count()} stages and {study.groups.count()} groups."
        )
