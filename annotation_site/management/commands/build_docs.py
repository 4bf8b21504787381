from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation_site.docs_site import DocsBuildError, docs_site_build


class Command(BaseCommand):
    help = (
        "Build the documentation site (mkdocs.yml, docs/) that the application serves under "
        "/docs/, into DJANGO_DOCS_ROOT (default: site/ in the checkout). Strict: a broken "
        "link fails the build and the site served so far stays."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--site-dir",
            type=Path,
            default=None,
            help="Build here instead of DJANGO_DOCS_ROOT.",
        )

    def handle(self, *args, site_dir: Path | None, **options):
        target = site_dir or Path(settings.DOCS_ROOT)
        try:
            docs_site_build(site_dir=target)
        except DocsBuildError as exc:
            raise CommandError(f"The documentation was not built: {exc}") from None
        self.stdout.write(f"The documentation is built in {target} (served under /docs/).")
