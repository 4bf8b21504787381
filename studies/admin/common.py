"""Pieces shared by the study admin modules: durations, the request of the page being
drawn, read-only and locked-once-used forms, and the study's labels for judgements.
What a user's roles let them see and do is ``per_study``."""

from contextvars import ContextVar

from django import forms
from django.db import models
from django.http import HttpRequest

from ..durations import HumanDurationField
from ..models import ErrorCategory, Judgement, Study
from ..protocol import selected_categories
from ..services.in_use import locked_fields, locked_fields_validate

# Every duration of the admin reads and shows as people write it ("3 days").
HUMAN_DURATIONS = {models.DurationField: {"form_class": HumanDurationField}}


def is_changelist(request) -> bool:
    match = getattr(request, "resolver_match", None)
    return bool(match and match.url_name and match.url_name.endswith("changelist"))


# --- the request of the page being drawn --------------------------------------------------
# A display method gets only the row; the absolute links it shows (a stage's join links)
# name the address the researcher reached the site at (``studies.links.absolute_url``).
_page_request: ContextVar[HttpRequest | None] = ContextVar("admin_page_request", default=None)


def page_request() -> HttpRequest | None:
    """The request of the change page being drawn, or None (outside one)."""
    return _page_request.get()


class PageRequestMixin:
    """Keeps the request for :func:`page_request` while the change page is drawn
    (rendered here: a TemplateResponse renders after the view returns)."""

    def changeform_view(self, request, *args, **kwargs):
        token = _page_request.set(request)
        try:
            response = super().changeform_view(request, *args, **kwargs)
            if hasattr(response, "render"):
                response.render()
            return response
        finally:
            _page_request.reset(token)


class ReadOnlyAdminMixin:
    """Rows written only by annotators or services: researchers look, never edit."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class LockedOnceUsedForm(forms.ModelForm):
    """A form of a model with fields locked once the row is in use
    (``studies.services.in_use``): a change to one of them is refused with the
    service's message, and nothing is saved."""

    def _differs_from_stored(self, name: str) -> bool:
        """Compared with the row as stored, not with ``changed_data``: a field with a
        callable default (a JSON list, say) takes its "initial" value from the request
        (``show_hidden_initial``), which a request can set to anything."""
        field = self.fields[name]
        return field.has_changed(self.get_initial_for_field(field, name), self[name].data)

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk:
            changed = [
                name
                for name in locked_fields(model=self._meta.model)
                if name in self.fields and self._differs_from_stored(name)
            ]
            locked_fields_validate(instance=self.instance, changed=changed)
        return cleaned


# --- the study's labels for judgements ---------------------------------------------------
# A judgement shows its study's category labels and rating labels (the instrument), cached
# for one admin page render so a page of judgements costs one query per study for them
# rather than one per row.
_labels_cache: ContextVar[dict | None] = ContextVar("category_labels", default=None)


def _cached(key: tuple, load):
    cache = _labels_cache.get()
    if cache is not None and key in cache:
        return cache[key]
    value = load()
    if cache is not None:
        cache[key] = value
    return value


def category_labels(study_id: int) -> dict[int, str]:
    return _cached(
        ("categories", study_id),
        lambda: dict(ErrorCategory.objects.filter(study_id=study_id).values_list("bit", "label")),
    )


def empathy_labels(study_id: int) -> dict[int, str]:
    """The study's rating labels, 1 to 5 (``Study.empathy_scale``)."""
    return _cached(
        ("empathy", study_id),
        lambda: Study.objects.only("empathy_labels").get(pk=study_id).empathy_scale,
    )


def judgement_category_labels(obj: Judgement) -> str:
    labels = category_labels(obj.assignment.stage.study_id)
    return ", ".join(selected_categories(obj.error_flags, sorted(labels.items())))


def judgement_most_evident_label(obj: Judgement) -> str:
    if obj.most_evident_bit is None:
        return ""
    return category_labels(obj.assignment.stage.study_id).get(obj.most_evident_bit, "?")


def judgement_empathy_label(obj: Judgement) -> str:
    """The rating with the study's label, e.g. "4 – somewhat agree"."""
    if obj.empathy is None:
        return ""
    label = empathy_labels(obj.assignment.stage.study_id).get(obj.empathy, "?")
    return f"{obj.empathy} – {label}"


class CategoryLabelCacheMixin:
    def _with_cache(self, view, *args, **kwargs):
        token = _labels_cache.set({})
        try:
            response = view(*args, **kwargs)
            if hasattr(response, "render"):
                response.render()
            return response
        finally:
            _labels_cache.reset(token)

    def changelist_view(self, request, extra_context=None):
        return self._with_cache(super().changelist_view, request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return self._with_cache(super().change_view, request, object_id, form_url, extra_context)
