"""What a user's roles let them see and do in the admin: the rows their roles reach
(``PerStudyAdminMixin``, ``PerStudyInlineMixin``, asking ``studies.permissions``), the
personal columns they may see, and a study's extra pages (``study_page``)."""

from functools import cache, wraps

from django import forms
from django.contrib import messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.admin.options import BaseModelAdmin
from django.contrib.admin.utils import get_fields_from_path
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.template.response import TemplateResponse

from ..models import Study
from ..permissions import (
    Capability,
    refusal_for,
    rows_where,
    study_by_id_for_user,
    study_ids_where,
    user_may,
    user_may_somewhere,
)
from ..personal_data import personal_fields


def study_id_of(obj, study_path: str, cache: dict | None = None) -> int | None:
    """The id of the study ``obj`` belongs to along ``study_path`` (``"pk"`` for a
    study). A relation not loaded yet is read as one value, kept in ``cache`` (keyed by
    the related row) for the rest of the request."""
    if study_path == "pk":
        return obj.pk
    first, _, rest = study_path.partition("__")
    field = obj._meta.get_field(first)
    if not rest:
        return getattr(obj, field.attname)
    if field.is_cached(obj):
        return study_id_of(getattr(obj, first), rest, cache)
    related_id = getattr(obj, field.attname)
    if related_id is None:
        return None
    key = (field.related_model, related_id, rest)
    if cache is None or key not in cache:
        value = (
            field.related_model._default_manager.filter(pk=related_id)
            .values_list(rest, flat=True)
            .first()
        )
        if cache is None:
            return value
        cache[key] = value
    return cache[key]


def model_study_path(admin_site, model) -> str | None:
    """How rows of ``model`` reach their study: its admin's ``study_path``, else
    ``"study"`` for a model with a foreign key to the study; None for rows of no study
    (user accounts)."""
    if admin_site.is_registered(model):
        path = getattr(admin_site.get_model_admin(model), "study_path", None)
        if path is not None:
            return path
    if model is Study:
        return "pk"
    for field in model._meta.concrete_fields:
        if field.name == "study" and field.is_relation and field.related_model is Study:
            return "study"
    return None


@cache
def _personal_columns() -> frozenset[tuple[type, str]]:
    return frozenset((kind.model, kind.field) for kind in personal_fields())


def is_personal_path(model, path: str) -> bool:
    """Whether the admin name or lookup ``path`` (a field, ``annotator__email``,
    ``email__contains``, a search field's ``^email``) reaches a personal column, as the
    models declare them (``PERSONAL_FIELDS``, ``studies.personal_data``)."""
    personal = _personal_columns()
    for part in path.lstrip("^=@").split("__"):
        try:
            field = model._meta.get_field(part)
        except FieldDoesNotExist:
            return False
        if (model, field.name) in personal:
            return True
        if not field.is_relation:
            return False
        model = field.related_model
    return False


def refusal_page(request, admin_site, reason: str) -> TemplateResponse:
    """The admin's 403 page, saying why."""
    context = {**admin_site.each_context(request), "title": "Not allowed", "reason": reason}
    return TemplateResponse(request, "admin/refused.html", context, status=403)


def study_page(capability: Capability):
    """An extra admin page of one study (a ``ModelAdmin`` method taking the URL's
    ``study_id``), for users whose role there allows ``capability``: the method gets
    the study instead of the id; others get ``study_by_id_for_user``'s 404, or a 403 page
    saying why (nothing done)."""

    def decorator(method):
        @wraps(method)
        def wrapper(self, request, study_id, *args, **kwargs):
            try:
                study = study_by_id_for_user(request.user, study_id, capability)
            except PermissionDenied as exc:
                return refusal_page(request, self.admin_site, str(exc))
            return method(self, request, study, *args, **kwargs)

        return wrapper

    return decorator


_STUDY_IDS_CACHE = "_admin_study_ids_of_rows"


class _PerStudy:
    """What ``PerStudyAdminMixin`` and ``PerStudyInlineMixin`` share: how a row
    reaches its study (``study_path``), the capability each action takes (None:
    nobody, not even a superuser), and the forms' menus narrowed to the studies where
    the user may write."""

    study_path: str = "study"
    view_capability: Capability | None = Capability.SEE
    change_capability: Capability | None = Capability.CONFIGURE
    add_capability: Capability | None = Capability.CONFIGURE
    delete_capability: Capability | None = Capability.CONFIGURE

    def row_study_id(self, request, obj) -> int | None:
        cache = getattr(request, _STUDY_IDS_CACHE, None)
        if cache is None:
            cache = {}
            setattr(request, _STUDY_IDS_CACHE, cache)
        return study_id_of(obj, self.study_path, cache)

    def rows_may(self, request, queryset, capability: Capability | None):
        """``queryset`` narrowed to rows of studies where the user may ``capability``."""
        if capability is None:
            return queryset.none()
        return rows_where(queryset, request.user, capability, self.study_path)

    def choices_narrow(self, request, form) -> None:
        """Every menu of rows of some study (a study, stage, group, category, context...)
        lists only those of studies where the user may write what this admin writes:
        neither offered nor accepted elsewhere."""
        capability = self.change_capability or self.add_capability or self.view_capability
        for field in form.fields.values():
            if not isinstance(field, forms.ModelChoiceField):
                continue
            path = model_study_path(self.admin_site, field.queryset.model)
            if path is None:
                continue
            field.queryset = rows_where(field.queryset, request.user, capability, path)
            lookup = getattr(field, "lookup_queryset", None)
            if lookup is not None:
                field.lookup_queryset = rows_where(lookup, request.user, capability, path)

    def narrowed_form(self, request, form_class):
        narrow = self.choices_narrow

        class Narrowed(form_class):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                narrow(request, self)

        Narrowed.__name__ = form_class.__name__
        Narrowed.__qualname__ = form_class.__qualname__
        return Narrowed


class PerStudyAdminMixin(_PerStudy):
    """A model admin of rows that each belong to one study: a user sees and changes
    only what their roles in the rows' studies allow (``studies.permissions``); model
    permissions grant nothing. The list holds the rows of studies where the user may
    ``view_capability``; a row's page, the add page and the delete page ask the
    capability of the action in the row's study (without a row: in some study). List
    filters offer only the values of the rows listed.

    Personal columns (the models' ``PERSONAL_FIELDS``, and the display methods named in
    ``personal_displays``) are left out of the list, the search, the filters and the
    pages unless the user may see personal data in the row's study (in a list: in every
    study it lists)."""

    personal_displays: tuple[str, ...] = ()

    def get_queryset(self, request):
        return self.rows_may(request, super().get_queryset(request), self.view_capability)

    def may(self, request, obj, capability: Capability | None) -> bool:
        """Whether the user may ``capability`` in ``obj``'s study (None: in some study)."""
        if capability is None:
            return False
        if obj is None:
            return user_may_somewhere(request.user, capability)
        return user_may(request.user, self.row_study_id(request, obj), capability)

    def has_module_permission(self, request):
        return self.has_view_permission(request) or self.has_add_permission(request)

    def has_view_permission(self, request, obj=None):
        return self.may(request, obj, self.view_capability)

    def has_change_permission(self, request, obj=None):
        return self.may(request, obj, self.change_capability)

    def has_add_permission(self, request):
        return self.may(request, None, self.add_capability)

    def has_delete_permission(self, request, obj=None):
        return self.may(request, obj, self.delete_capability)

    def rows_refusal(self, request, queryset, capability: Capability) -> str | None:
        """Why the user may not ``capability`` with every row of ``queryset`` (an
        action's rows), naming the first study that refuses; None when they may."""
        allowed = study_ids_where(request.user, capability)
        if allowed is None:
            return None
        outside = (
            queryset.order_by()
            .exclude(**{f"{self.study_path}__in": allowed})
            .values_list(self.study_path, flat=True)
            .first()
        )
        if outside is None:
            return None
        title = Study.objects.filter(pk=outside).values_list("title", flat=True).first()
        return f"Nothing was changed: {title}: {refusal_for(request.user, outside, capability)}"

    def action_refused(self, request, queryset, capability: Capability) -> bool:
        """Tells the user (and returns True) when ``rows_refusal`` refuses the action."""
        refusal = self.rows_refusal(request, queryset, capability)
        if refusal is not None:
            self.message_user(request, refusal, messages.ERROR)
        return refusal is not None

    # --- personal columns --------------------------------------------------------------

    def personal_data_shown(self, request, obj=None) -> bool:
        if obj is not None:
            return self.may(request, obj, Capability.PERSONAL_DATA)
        personal = study_ids_where(request.user, Capability.PERSONAL_DATA)
        if personal is None:
            return True
        listed = study_ids_where(request.user, self.view_capability) or []
        return set(listed) <= set(personal)

    def is_personal(self, name) -> bool:
        if isinstance(name, (list, tuple)):
            return False
        if name in self.personal_displays:
            return True
        return isinstance(name, str) and is_personal_path(self.model, name)

    def _without_personal(self, names, request, obj=None):
        if self.personal_data_shown(request, obj):
            return names
        kept = []
        for name in names:
            if isinstance(name, (list, tuple)):
                name = type(name)(n for n in name if not self.is_personal(n))
                if not name:
                    continue
            elif self.is_personal(name):
                continue
            kept.append(name)
        return kept

    def get_fieldsets(self, request, obj=None):
        return [
            (name, {**options, "fields": self._without_personal(options["fields"], request, obj)})
            for name, options in super().get_fieldsets(request, obj)
        ]

    def get_readonly_fields(self, request, obj=None):
        return self._without_personal(super().get_readonly_fields(request, obj), request, obj)

    def get_list_display(self, request):
        return self._without_personal(super().get_list_display(request), request)

    def get_search_fields(self, request):
        return self._without_personal(super().get_search_fields(request), request)

    def get_list_filter(self, request):
        """Relation filters list only the related rows of the rows listed."""
        filters = []
        for entry in self._without_personal(super().get_list_filter(request), request):
            if isinstance(entry, str) and get_fields_from_path(self.model, entry)[-1].is_relation:
                entry = (entry, RelatedOnlyFieldListFilter)
            filters.append(entry)
        return filters

    def lookup_allowed(self, lookup, value, request=None):
        """A filter in the address on a personal column (``?email__startswith=``) would
        tell it letter by letter: refused to those who may not see it."""
        if (
            request is not None
            and is_personal_path(self.model, lookup)
            and not self.personal_data_shown(request)
        ):
            return False
        return super().lookup_allowed(lookup, value, request)

    def get_form(self, request, obj=None, change=False, **kwargs):
        return self.narrowed_form(request, super().get_form(request, obj, change, **kwargs))


class PerStudyInlineMixin(_PerStudy):
    """An inline of rows of one study on a page of the same study: each action asks
    its capability in the parent row's study (``study_path`` leads from the inline's own
    rows to it). On the parent's add page, what adding the parent needs."""

    def get_queryset(self, request):
        # Not InlineModelAdmin's, which asks the permissions without the parent row.
        queryset = BaseModelAdmin.get_queryset(self, request)
        return self.rows_may(request, queryset, self.view_capability)

    def _parent_may(self, request, obj, capability: Capability | None) -> bool:
        if capability is None:
            return False
        parent_admin = self.admin_site.get_model_admin(self.parent_model)
        if obj is None or obj.pk is None:
            return parent_admin.has_add_permission(request)
        return user_may(request.user, parent_admin.row_study_id(request, obj), capability)

    def has_view_permission(self, request, obj=None):
        return self._parent_may(request, obj, self.view_capability)

    def has_change_permission(self, request, obj=None):
        return self._parent_may(request, obj, self.change_capability)

    def has_add_permission(self, request, obj):
        return self._parent_may(request, obj, self.add_capability)

    def has_delete_permission(self, request, obj=None):
        return self._parent_may(request, obj, self.delete_capability)

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        formset.form = self.narrowed_form(request, formset.form)
        return formset
