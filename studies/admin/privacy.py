"""Deleting the personal data of a closed study: the study list's action (with a
confirmation page listing what goes) and the read-only log of purges."""

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import ValidationError
from django.template.response import TemplateResponse

from ..models import PersonalDataPurge
from ..permissions import Capability
from ..personal_data import personal_data_counts_text, personal_data_phrases
from ..services import study_personal_data_counts, study_purge_personal_data
from .common import ReadOnlyAdminMixin
from .per_study import PerStudyAdminMixin


class PurgePersonalDataMixin:
    """``StudyAdmin``'s action (a ``PerStudyAdminMixin``); ``purge_personal_data`` goes
    in its ``actions``. For the study's owners (``Capability.GOVERN``)."""

    def has_purge_permission(self, request) -> bool:
        return self.may(request, None, Capability.GOVERN)

    @admin.action(
        description="Delete the personal data of the selected closed study…",
        permissions=["purge"],
    )
    def purge_personal_data(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one study to purge.", messages.WARNING)
            return None
        if self.action_refused(request, queryset, Capability.GOVERN):
            return None
        study = queryset.get()
        if "apply" in request.POST:
            try:
                purge = study_purge_personal_data(study=study, by=request.user)
            except ValidationError as exc:
                self.message_user(request, " ".join(exc.messages), messages.ERROR)
                return None
            done = personal_data_counts_text(purge.deleted)
            self.message_user(
                request, f"Deleted from {study}: {done}. Logged under your name.", messages.SUCCESS
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "study": study,
            "counts": personal_data_phrases(study_personal_data_counts(study=study)),
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "title": f"Delete the personal data of {study}",
        }
        return TemplateResponse(request, "admin/studies/study/purge.html", context)


@admin.register(PersonalDataPurge)
class PersonalDataPurgeAdmin(ReadOnlyAdminMixin, PerStudyAdminMixin, admin.ModelAdmin):
    """The log of purges (what was deleted, in counts, and by whom): seen by the roles
    that see the study."""

    list_display = ("study", "purged_at", "purged_by_name", "deleted_summary")
    list_filter = ("study",)
    fields = ("study", "purged_at", "purged_by", "purged_by_name", "deleted")
    readonly_fields = fields

    @admin.display(description="deleted")
    def deleted_summary(self, obj):
        return personal_data_counts_text(obj.deleted or {})
