"""Reads for coding descriptions: which answers are descriptions to code, in which
order, and how far a coder has got."""

from dataclasses import dataclass

from django.db.models import CharField, Count, F, Q, QuerySet, Value
from django.db.models.functions import MD5, Cast, Concat

from ..models import Code, Coder, DescriptionCoding, Judgement, Stage, Study
from ..models.coding import PRIMARY_FIRST


def description_order(prefix: str = "") -> tuple:
    """The order coders meet descriptions in (and the codes export lists them in), for
    a query on judgements (``prefix`` the path to the judgement, e.g. ``"judgement__"``):
    by dialogue, then, within a dialogue, the candidates in an order drawn from the
    study's seed, so that where a description sits does not give its source away (the
    materials often list the human reflection first), then by answer."""
    shuffled = MD5(
        Concat(
            Cast(F(f"{prefix}assignment__stage__study__seed"), CharField()),
            Value(":"),
            Cast(F(f"{prefix}reflection_id"), CharField()),
            output_field=CharField(),
        )
    )
    return (
        F(f"{prefix}assignment__batch__context__external_id").asc(),
        shuffled.asc(),
        F(f"{prefix}reflection_id").asc(),
        F(f"{prefix}pk").asc(),
    )


def stage_descriptions(*, stage: Stage) -> QuerySet[Judgement]:
    """The stage's descriptions to code: the judgements that count
    (``Judgement.analysed_q``) with a description, in coding order."""
    return (
        Judgement.objects.analysed()
        .filter(assignment__stage=stage)
        .exclude(error_description="")
        .order_by(*description_order())
    )


def stage_description_sources(*, stage: Stage) -> list[str]:
    return list(
        stage_descriptions(stage=stage)
        .order_by("reflection__source")
        .values_list("reflection__source", flat=True)
        .distinct()
    )


def descriptions_filtered(
    *, stage: Stage, coder: Coder | None, source: str = "", code: Code | None = None
) -> QuerySet[Judgement]:
    """The stage's descriptions from ``source`` (all when empty) and, with ``code``,
    those ``coder`` gave that code (a coder filters by their own codes only)."""
    qs = stage_descriptions(stage=stage)
    if source:
        qs = qs.filter(reflection__source=source)
    if code is not None:
        qs = qs.filter(codings__coder=coder, codings__codes=code) if coder else qs.none()
    return qs


@dataclass(frozen=True)
class CodingPosition:
    """Where a coder is in a (filtered) list of descriptions."""

    ids: list[int]
    coded_ids: frozenset[int]

    @property
    def total(self) -> int:
        return len(self.ids)

    @property
    def coded(self) -> int:
        return len(self.coded_ids.intersection(self.ids))

    @property
    def all_coded(self) -> bool:
        """Every description of the list is coded (and there is at least one)."""
        return bool(self.ids) and self.coded == self.total

    def first_uncoded(self) -> int | None:
        """Where to resume: the first description not yet coded (None once all are)."""
        for pk in self.ids:
            if pk not in self.coded_ids:
                return pk
        return None

    def index(self, pk: int | None) -> int | None:
        try:
            return self.ids.index(pk)
        except ValueError:
            return None

    def neighbour(self, pk: int, step: int) -> int | None:
        i = self.index(pk)
        if i is None or not 0 <= i + step < len(self.ids):
            return None
        return self.ids[i + step]


def coding_position(*, descriptions: QuerySet[Judgement], coder: Coder | None) -> CodingPosition:
    """Two queries: the ids in order, and which of them ``coder`` has coded."""
    ids = list(descriptions.values_list("pk", flat=True))
    coded = (
        DescriptionCoding.objects.filter(coder=coder, judgement_id__in=ids).values_list(
            "judgement_id", flat=True
        )
        if coder is not None
        else []
    )
    return CodingPosition(ids=ids, coded_ids=frozenset(coded))


@dataclass(frozen=True)
class OtherCoder:
    """Another coder of the study and how many of a stage's descriptions they have
    still to code."""

    name: str
    left: int


def coding_left_to_others(*, stage: Stage, coder: Coder | None) -> list[OtherCoder]:
    """The study's coders other than ``coder`` (primary first) with the number of the
    stage's descriptions each has not coded yet. Two queries."""
    descriptions = stage_descriptions(stage=stage).order_by().values("pk")
    total = descriptions.count()
    others = Coder.objects.filter(study=stage.study_id).select_related("user")
    if coder is not None:
        others = others.exclude(pk=coder.pk)
    others = others.annotate(
        n_coded=Count("codings", filter=Q(codings__judgement__in=descriptions))
    ).order_by(*PRIMARY_FIRST)
    return [OtherCoder(name=o.user.get_username(), left=total - o.n_coded) for o in others]


# --- the coding page (studies/views/coding.py) ---------------------------------------------


def coding_stage(*, slug: str, position: int) -> Stage | None:
    """The stage at ``position`` of the study ``slug``, with its study."""
    return Stage.objects.select_related("study").filter(study__slug=slug, position=position).first()


def coder_of(*, study: Study, user) -> Coder | None:
    """``user``'s coder row in ``study``; None until their first coding."""
    return Coder.objects.filter(study=study, user=user).first()


def study_code(*, study_id: int, slug: str) -> Code | None:
    return Code.objects.filter(study=study_id, slug=slug).first()


def study_codes(*, study: Study, slugs) -> list[Code]:
    """The codes of ``study`` among ``slugs`` (unknown slugs are left out)."""
    return list(Code.objects.filter(study=study, slug__in=slugs))


def codebook(*, study: Study) -> list[Code]:
    """The study's codes in the order they were added: a code keeps its number key
    as the codebook grows."""
    return list(Code.objects.filter(study=study).order_by("pk"))


def code_place(*, code: Code) -> int:
    """``code``'s place in ``codebook`` (0 for the first code added)."""
    return Code.objects.filter(study=code.study_id, pk__lt=code.pk).count()


def description_for_coding(*, judgement_id: int) -> Judgement:
    """The answer with what its panel shows: the reflection, the conversation and the
    group."""
    return Judgement.objects.select_related(
        "reflection", "assignment__batch__context", "assignment__group"
    ).get(pk=judgement_id)


def judgement_by_id(*, judgement_id: int | None) -> Judgement | None:
    return Judgement.objects.filter(pk=judgement_id).first() if judgement_id else None


def own_coding(*, judgement_id: int, coder: Coder) -> tuple[DescriptionCoding | None, set[str]]:
    """``coder``'s coding of the answer and the slugs of its codes."""
    coding = DescriptionCoding.objects.filter(judgement_id=judgement_id, coder=coder).first()
    slugs = set(coding.codes.values_list("slug", flat=True)) if coding else set()
    return coding, slugs
