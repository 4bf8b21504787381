"""What identifies a person, read from one declaration: each model's
``PERSONAL_FIELDS`` constant (``Annotator``, ``CrowdEntry``, ``QuestionAnswer``...) lists its personal
columns, so a new personal field is one more name there. The purge
(:func:`studies.services.privacy.study_purge_personal_data`) and its counts read
:func:`personal_fields`; :data:`PERSONAL_ROWS` lists the rows deleted whole
(browser sessions, and the drafts of items never saved).

What a purged column becomes follows from the column, so the row's constraints still
hold: a JSON column ``{}``; a secret (a unique column whose default draws a fresh
random value, such as the invitation link's access token) ``purged-`` and a fresh
value of its default, so it stays unique and cannot be guessed; a text column that must
stay unique or filled (unique, or named by one of the model's constraints, such as a
crowd worker's id that goes with their platform) ``purged-<row id>``; any other text
column ``""``.

Browser sessions are shared: one browser may be signed in to several studies (the
session's ``annotators``). A purge signs the browsers out of this study only
(:func:`studies.sessions.sessions_sign_out_study`) and leaves their other sign-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models import CharField, Q, Value
from django.db.models.functions import Cast, Concat

from .models import AnnotatorSession, ItemDraft, Study
from .sessions import sessions_sign_out_study

PURGED_PREFIX = "purged-"


@dataclass(frozen=True)
class PersonalField:
    model: type[models.Model]
    field: str
    erased: Any  # a value or an expression of the row
    still_set: Q  # the rows still holding it
    of_study: str  # the lookup from the model to its study
    fresh: Callable[[], str] | None = None  # a secret: each row gets its own new value

    def erase(self, rows: models.QuerySet) -> None:
        """Erase the column in ``rows`` (one query; a secret, one per thousand rows)."""
        if self.fresh is None:
            rows.update(**{self.field: self.erased})
            return
        changed = list(rows.only("pk"))
        for row in changed:
            setattr(row, self.field, self.fresh())
        self.model.objects.bulk_update(changed, [self.field], batch_size=1000)

    @property
    def what(self) -> str:
        """How the log and the counts name it: "annotator: email"."""
        meta = self.model._meta
        return f"{meta.verbose_name}: {meta.get_field(self.field).verbose_name}"

    def phrase(self, n: int) -> str:
        """How a person reads ``n`` of it: "platform participant ids of 5 annotators"."""
        meta = self.model._meta
        field = meta.get_field(self.field)
        # One JSON object of data per row ("platform data") has no plural.
        plural = n != 1 and not isinstance(field, models.JSONField)
        rows = meta.verbose_name if n == 1 else meta.verbose_name_plural
        return f"{field.verbose_name}{'s' if plural else ''} of {n} {rows}"


@dataclass(frozen=True)
class PersonalRows:
    model: type[models.Model]
    what: str  # plural: "browser sessions"
    of_study: Callable[[Study], Q]
    erase: Callable[[Study], object]  # removes the study's part of those rows
    what_one: str = ""  # singular: "browser session"

    def phrase(self, n: int) -> str:
        return f"{n} {self.what_one if n == 1 and self.what_one else self.what}"


def _constrained(model: type[models.Model], name: str) -> bool:
    field = model._meta.get_field(name)
    if field.unique:
        return True
    for constraint in model._meta.constraints:
        if name in getattr(constraint, "fields", ()) or name in str(
            getattr(constraint, "condition", "")
        ):
            return True
    return False


def _study_lookup(model: type[models.Model]) -> str:
    """The lookup to the row's study: ``study``, ``annotator__study``, or what the
    model names in ``PERSONAL_STUDY`` (e.g. a questionnaire answer's)."""
    if lookup := getattr(model, "PERSONAL_STUDY", ""):
        return lookup
    names = {f.name for f in model._meta.get_fields()}
    if "study" in names:
        return "study"
    if "annotator" in names:
        return "annotator__study"
    raise LookupError(f"{model.__name__} declares personal fields but has no way to its study.")


def _is_secret(field: models.Field) -> bool:
    return field.unique and callable(field.default)


def _personal_field(model: type[models.Model], name: str) -> PersonalField:
    field = model._meta.get_field(name)
    if isinstance(field, models.JSONField):
        erased, still_set = {}, ~Q(**{name: {}})
    elif _is_secret(field):
        still_set = ~Q(**{f"{name}__startswith": PURGED_PREFIX})
        return PersonalField(
            model,
            name,
            None,
            still_set,
            _study_lookup(model),
            fresh=lambda: PURGED_PREFIX + field.default(),
        )
    elif _constrained(model, name):
        erased = Concat(Value(PURGED_PREFIX), Cast("pk", CharField()))
        still_set = ~Q(**{name: ""}) & ~Q(**{f"{name}__startswith": PURGED_PREFIX})
    else:
        erased, still_set = "", ~Q(**{name: ""})
    return PersonalField(model, name, erased, still_set, _study_lookup(model))


def personal_fields() -> list[PersonalField]:
    """Every declared personal column of the project's models, model by model."""
    return [
        _personal_field(model, name)
        for model in apps.get_models()
        for name in getattr(model, "PERSONAL_FIELDS", ())
    ]


PERSONAL_ROWS: tuple[PersonalRows, ...] = (
    PersonalRows(
        AnnotatorSession,
        "browser sessions",
        lambda study: Q(annotators__has_key=study.slug),
        lambda study: sessions_sign_out_study(slug=study.slug),
        what_one="browser session",
    ),
    # An item's choices the annotator never saved, free text included.
    PersonalRows(
        ItemDraft,
        "unsaved item drafts",
        lambda study: Q(assignment__stage__study=study),
        lambda study: ItemDraft.objects.filter(assignment__stage__study=study).delete(),
        what_one="unsaved item draft",
    ),
)


def personal_data_phrases(counts: dict[str, int]) -> list[str]:
    """Counts of personal data (``study_personal_data_counts``, a purge's log) as a
    person reads them: ["platform participant ids of 5 annotators", "1 browser
    session"]. A kind no longer declared (an old log's) reads "<n> <what>"."""
    kinds = {kind.what: kind for kind in (*personal_fields(), *PERSONAL_ROWS)}
    return [kinds[what].phrase(n) if what in kinds else f"{n} {what}" for what, n in counts.items()]


def personal_data_counts_text(counts: dict[str, int]) -> str:
    return ", ".join(personal_data_phrases(counts))
