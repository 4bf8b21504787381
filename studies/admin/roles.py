"""A study's Roles page (``admin:studies_study_roles``): who holds which role, the audit
list of every grant, change and withdrawal, and, for those who may govern the study
(its owners, superusers), the forms that grant, change and withdraw roles through
``studies.services.roles``. Anyone else with a role that may see the study reads the
lists; a coder is refused (403), and a user without a role in the study gets a 404."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html

from ..models import Role, Study, StudyRole, StudyRoleEvent
from ..permissions import ROLE_CAPABILITIES, Capability, refusal_for, user_may
from ..services.roles import role_user_by_name, study_role_grant, study_role_withdraw
from .per_study import refusal_page, study_page


def role_description(role: str) -> str:
    """What ``role`` allows, in one line, from ``ROLE_CAPABILITIES``."""
    allowed = ROLE_CAPABILITIES[role]
    return "; ".join(
        f"may {capability.value}" for capability in Capability if capability in allowed
    )


def _role_choices_described():
    return [
        (role.value, format_html("<strong>{}</strong>: {}", role.label, role_description(role)))
        for role in Role
    ]


class GrantRoleForm(forms.Form):
    account = forms.CharField(
        label="Account",
        max_length=254,
        help_text="The username or e-mail address of a staff account.",
    )
    role = forms.ChoiceField(
        label="Role", choices=_role_choices_described, widget=forms.RadioSelect
    )
    note = forms.CharField(
        label="Note",
        max_length=200,
        required=False,
        help_text="Why, for the audit list (optional): an ethics amendment, say.",
    )

    def clean_account(self):
        return role_user_by_name(self.cleaned_data["account"])


class ChangeRoleForm(forms.Form):
    """One holder's new role (the holders' rows of the list)."""

    user = forms.IntegerField(widget=forms.HiddenInput)
    role = forms.ChoiceField(label="New role", choices=Role.choices)


class WithdrawRoleForm(forms.Form):
    user = forms.IntegerField(widget=forms.HiddenInput)


def _holder(study: Study, user_id: int) -> StudyRole:
    holder = StudyRole.objects.filter(study=study, user_id=user_id).select_related("user").first()
    if holder is None:
        raise ValidationError("that account has no role in this study.", code="role_missing")
    return holder


def _label(role: str) -> str:
    return Role(role).label.lower()


def _refused(request, exc: ValidationError) -> None:
    # The admin capitalises a message's first letter: the service's message, which may
    # start with a username, comes second.
    messages.error(request, f"Nothing was changed: {' '.join(exc.messages)}")


class StudyRolesMixin:
    """``StudyAdmin``'s Roles page."""

    def get_urls(self):
        return [
            path(
                "<int:study_id>/roles/",
                self.admin_site.admin_view(self.roles_view),
                name="studies_study_roles",
            ),
            *super().get_urls(),
        ]

    @study_page(Capability.SEE)
    def roles_view(self, request: HttpRequest, study: Study):
        """GET: the lists (and the forms, for those who may govern). POST (``action``
        grant, change or withdraw; withdraw asks for a confirmation first): one change
        through the services, then back here with a message saying what changed; when
        refused, the service's message, and nothing written."""
        if request.method == "POST" and not user_may(request.user, study, Capability.GOVERN):
            return refusal_page(
                request, self.admin_site, refusal_for(request.user, study, Capability.GOVERN)
            )
        if request.method != "POST":
            return self._roles_page(request, study, grant_form=GrantRoleForm())
        action = request.POST.get("action")
        if action == "grant":
            form = GrantRoleForm(request.POST)
            if not self._grant(request, study, form):
                return self._roles_page(request, study, grant_form=form)
        elif action == "change":
            self._change(request, study, ChangeRoleForm(request.POST))
        elif action == "withdraw":
            if "confirmed" not in request.POST:
                return self._withdraw_confirmation(request, study, WithdrawRoleForm(request.POST))
            self._withdraw(request, study, WithdrawRoleForm(request.POST))
        else:
            messages.error(request, "Nothing was changed: unknown action.")
        return HttpResponseRedirect(request.path)

    def _roles_context(self, request, study: Study, title: str) -> dict:
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "study": study,
            "title": title,
        }

    def _roles_page(self, request, study: Study, *, grant_form: GrantRoleForm):
        holders = sorted(
            StudyRole.objects.filter(study=study).select_related("user", "granted_by"),
            key=lambda holder: (Role.values.index(holder.role), holder.user.get_username()),
        )
        context = {
            **self._roles_context(request, study, f"Roles in {study.title}"),
            "governs": user_may(request.user, study, Capability.GOVERN),
            "has_owner": any(holder.role == Role.OWNER for holder in holders),
            "holders": holders,
            "events": StudyRoleEvent.objects.filter(study=study).order_by("-at", "-pk"),
            "grant_form": grant_form,
            "role_choices": Role.choices,
            "roles": [(role.label, role_description(role)) for role in Role],
        }
        return TemplateResponse(request, "admin/studies/study/roles.html", context)

    def _grant(self, request, study: Study, form: GrantRoleForm) -> bool:
        if not form.is_valid():
            return False
        user, role = form.cleaned_data["account"], form.cleaned_data["role"]
        try:
            study_role_grant(
                study=study, user=user, role=role, by=request.user, note=form.cleaned_data["note"]
            )
        except ValidationError as exc:
            form.add_error(None, exc)
            return False
        messages.success(
            request, f"Role granted: {user.get_username()} is now {_label(role)} of {study.title}."
        )
        return True

    def _change(self, request, study: Study, form: ChangeRoleForm) -> None:
        try:
            if not form.is_valid():
                raise ValidationError("choose one of the roles.")
            holder = _holder(study, form.cleaned_data["user"])
            role = form.cleaned_data["role"]
            study_role_grant(study=study, user=holder.user, role=role, by=request.user)
        except ValidationError as exc:
            _refused(request, exc)
            return
        messages.success(
            request,
            f"Role changed: {holder.user.get_username()} is now {_label(role)} of {study.title} "
            f"(was {_label(holder.role)}).",
        )

    def _withdraw(self, request, study: Study, form: WithdrawRoleForm) -> None:
        try:
            if not form.is_valid():
                raise ValidationError("choose an account.")
            holder = _holder(study, form.cleaned_data["user"])
            study_role_withdraw(study=study, user=holder.user, by=request.user)
        except ValidationError as exc:
            _refused(request, exc)
            return
        messages.success(
            request,
            f"Role withdrawn: {holder.user.get_username()} no longer has a role in {study.title} "
            f"(was {_label(holder.role)}).",
        )

    def _withdraw_confirmation(self, request, study: Study, form: WithdrawRoleForm):
        try:
            if not form.is_valid():
                raise ValidationError("choose an account.")
            holder = _holder(study, form.cleaned_data["user"])
        except ValidationError as exc:
            _refused(request, exc)
            return HttpResponseRedirect(request.path)
        title = f"Withdraw the role of {holder.user.get_username()} in {study.title}?"
        context = {**self._roles_context(request, study, title), "withdrawing": holder}
        return TemplateResponse(request, "admin/studies/study/roles.html", context)
