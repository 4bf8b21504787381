"""What the commands taking ``--by USERNAME`` share: the account, checked against the
study's roles before anything is done."""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from studies.permissions import Capability, refusal_for, user_may


def acting_account(by: str | None, study, *capabilities: Capability):
    """The account named by ``--by`` (None without it); CommandError when there is no
    such account or its role in ``study`` lacks one of ``capabilities``."""
    if not by:
        return None
    user = get_user_model().objects.filter(username=by).first()
    if user is None:
        raise CommandError(f'No account "{by}".')
    for capability in capabilities:
        if not user_may(user, study, capability):
            raise CommandError(refusal_for(user, study, capability))
    return user
