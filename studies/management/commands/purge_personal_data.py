from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from studies.models import Role, Study
from studies.permissions import Capability, user_is_active_staff, user_may, user_role
from studies.personal_data import personal_data_counts_text
from studies.services import study_personal_data_counts, study_purge_personal_data


class Command(BaseCommand):
    help = (
        "Delete what identifies the annotators of a closed study (e-mail addresses, crowd "
        "platform ids, browser sessions, invitation tokens); the pseudonymous annotations "
        "stay. Logged with who and when; the study can never be opened again. With "
        "--by, that account's role in the study must allow purging it (superusers may)."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument(
            "--dry-run", action="store_true", help="Only count what would be deleted."
        )
        parser.add_argument(
            "--by",
            metavar="USERNAME",
            help="The account responsible, recorded in the log; refused (nothing purged) "
            "unless it may purge the study's personal data.",
        )

    def handle(self, *args, study_slug: str, dry_run: bool, by: str | None, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        user = None
        if by:
            user = get_user_model().objects.filter(username=by).first()
            if user is None:
                raise CommandError(f'No account "{by}".')
            if not user_may(user, study, Capability.GOVERN):
                raise CommandError(f"{_refusal(user, by, study)} Nothing purged.")
        if dry_run:
            counts = study_personal_data_counts(study=study)
            self.stdout.write(
                f"Would delete from {study.slug}: {personal_data_counts_text(counts)}."
            )
            return
        try:
            purge = study_purge_personal_data(study=study, by=user)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(
            f"Deleted from {study.slug} at {purge.purged_at:%Y-%m-%d %H:%M %Z}: "
            f"{personal_data_counts_text(purge.deleted)}."
        )


def _refusal(user, by: str, study: Study) -> str:
    """Why the account ``by`` may not purge ``study``."""
    if not user_is_active_staff(user):
        return f'"{by}" is not an active staff account.'
    role = user_role(user, study)
    if role is None:
        return f'"{by}" has no role in the study {study.slug}.'
    return (
        f'"{by}" is {Role(role).label.lower()} of the study {study.slug}: purging takes a '
        f"role that may {Capability.GOVERN.value}."
    )
