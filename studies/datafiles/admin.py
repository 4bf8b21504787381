"""The admin's upload of a data file (the materials on the study's page, automatic
scores from the analysis app): one form and one view, so every upload checks the
file's type and reports a refused file the same way."""

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ..models import Study
from .problems import DataFileError


class DataFileUploadForm(forms.Form):
    """One uploaded file whose name ends with one of ``extensions``."""

    extensions: tuple[str, ...] = (".csv",)
    file = forms.FileField()

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if not upload.name.lower().endswith(self.extensions):
            raise ValidationError(f"Upload a {' or '.join(self.extensions)} file.")
        return upload


def data_file_import_view(
    request: HttpRequest,
    *,
    admin_site,
    study: Study,
    form_class: type[DataFileUploadForm],
    template: str,
    title: str,
    do_import: Callable[[dict], object],
    extra_context: dict | None = None,
) -> HttpResponse:
    """Show the upload form, import a valid upload (``do_import`` gets the form's cleaned
    data: the upload under ``file``, and any options), and then either return to the
    study's page with the summary or list every problem of the refused file
    (``admin/includes/data_file_problems.html``). The caller checks permissions."""
    error = None
    form = form_class(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            summary = do_import(form.cleaned_data)
        except DataFileError as exc:
            error = exc
            messages.error(
                request, f"Nothing was imported: the file has {exc.total} problem(s), listed below."
            )
        else:
            messages.success(request, f"Imported {upload.name}: {summary}")
            return HttpResponseRedirect(reverse("admin:studies_study_change", args=[study.pk]))
    context = {
        **admin_site.each_context(request),
        "opts": Study._meta,
        "study": study,
        "form": form,
        "error": error,
        "title": title,
        **(extra_context or {}),
    }
    return TemplateResponse(request, template, context)
