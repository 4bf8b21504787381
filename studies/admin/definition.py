"""The admin's pages for a study's definition file (:mod:`studies.definition`): *Export
the definition* on a study's page (a role that may see the study; the crowd codes take
one that may manage crowd settings) and *Import a study definition* on the list of
studies (who may create studies), which makes a new draft study or, for a file with
any mistake, lists every mistake and writes nothing."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ..definition import (
    KINDS,
    definition_parse,
    definition_text,
    study_definition,
    study_import_definition,
)
from ..models import Study
from ..permissions import Capability, user_may, user_may_create_studies
from .per_study import refusal_page

#: The largest definition file the import page takes (a definition is text, far less).
DEFINITION_MAX_BYTES = 2 * 1024 * 1024
CODES_CAPABILITY = Capability.MANAGE_ANNOTATORS


class DefinitionExportForm(forms.Form):
    kind = forms.ChoiceField(
        label="File", choices=[("yaml", "YAML (.yaml)"), ("json", "JSON (.json)")], initial="yaml"
    )
    with_codes = forms.BooleanField(
        label="With each stage's crowd completion codes", required=False
    )


class DefinitionImportForm(forms.Form):
    file = forms.FileField(label="Definition file (.yaml, .yml or .json)")
    slug = forms.SlugField(
        required=False, max_length=64, help_text="The new study's slug; empty: the file's."
    )
    title = forms.CharField(
        required=False, max_length=200, help_text="The new study's title; empty: the file's."
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > DEFINITION_MAX_BYTES:
            raise ValidationError("The file is larger than 2 MB: a definition is far smaller.")
        return upload


def definition_export_view(model_admin, request: HttpRequest, study: Study) -> HttpResponse:
    may_codes = user_may(request.user, study, CODES_CAPABILITY)
    form = DefinitionExportForm(request.GET or None)
    if form.is_bound and form.is_valid():
        kind, with_codes = form.cleaned_data["kind"], form.cleaned_data["with_codes"]
        if with_codes and not may_codes:
            return refusal_page(
                request,
                model_admin.admin_site,
                f"The crowd completion codes take a role that may {CODES_CAPABILITY.value}.",
            )
        text = definition_text(study_definition(study, with_codes=with_codes), kind)
        content_type = "application/json" if kind == "json" else "application/yaml"
        response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-study.{kind}"'
        return response
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "study": study,
        "form": form,
        "may_codes": may_codes,
        "kinds": KINDS,
        "title": f"Export the definition of {study.title}",
    }
    return TemplateResponse(request, "admin/studies/study/definition_export.html", context)


def definition_import_view(model_admin, request: HttpRequest) -> HttpResponse:
    if not user_may_create_studies(request.user):
        return refusal_page(
            request, model_admin.admin_site, "Importing a study definition creates a study: "
            "your account may not create studies.",
        )  # fmt: skip
    problems: list[str] = []
    form = DefinitionImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            data = definition_parse(upload.read().decode("utf-8"))
            study = study_import_definition(
                data,
                user=request.user,
                slug=form.cleaned_data["slug"] or None,
                title=form.cleaned_data["title"] or None,
            )
        except UnicodeDecodeError:
            problems = ["The file is not UTF-8 text."]
        except ValidationError as exc:
            problems = exc.messages
        else:
            messages.success(
                request,
                f"Created the draft study “{study.title}” from {upload.name}: import its "
                "materials next.",
            )
            return redirect(reverse("admin:studies_study_change", args=[study.pk]))
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "form": form,
        "problems": problems,
        "title": "Import a study definition",
    }
    status = 422 if problems else 200
    return TemplateResponse(
        request, "admin/studies/study/definition_import.html", context, status=status
    )
