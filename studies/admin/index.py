"""What the admin's index adds for roles: the coding pages of a user who only codes
(their index has no lists to show), and, for those who may govern every study
(superusers), the studies nobody owns yet."""

from dataclasses import dataclass

from django.urls import reverse

from ..models import Stage, Study
from ..permissions import Capability, rows_where, studies_where, user_may_somewhere


@dataclass(frozen=True)
class CodingPage:
    study: str
    stage: str
    url: str


def coding_pages_for(user) -> list[CodingPage]:
    """The coding pages (one per stage asking for descriptions) of the studies
    ``user`` codes, when no role of theirs lets them see a study in the admin (a coder
    only); otherwise none."""
    if user_may_somewhere(user, Capability.SEE):
        return []
    stages = (
        Stage.objects.filter(study__in=studies_where(user, Capability.CODE))
        .select_related("study")
        .order_by("study__title", "position")
    )
    return [
        CodingPage(
            study=stage.study.title,
            stage=stage.name,
            url=reverse("studies:coding", args=[stage.study.slug, stage.position]),
        )
        for stage in stages
        if stage.answer_settings.asks_description
    ]


def ownerless_studies_for(user) -> list[Study]:
    """The studies without an owner that ``user`` may give one (govern): every such
    study for a superuser, none for anyone else (an owner's studies have one)."""
    return list(
        rows_where(Study.objects.without_owner(), user, Capability.GOVERN, "pk")
        .only("pk", "title", "slug")
        .order_by("title")
    )
