"""Requests carrying text the database cannot store (``studies.text.storable_problem``:
a NUL character, ``%00`` in a URL; an unpaired surrogate) are refused before any view
or form sees them, on every URL of the site (the admin, the API, exports and coding
included): PostgreSQL refuses such text, so a lookup or save with it would end in a
500.

* in the path: 404, no page has such an address;
* in a query parameter or a POST form field (name or value, urlencoded or multipart):
  400, naming the parameter.

The API (the ``api`` URL namespace) answers in its JSON error format
(``studies.api_framework``), other pages with ``404.html`` and ``400.html``. The value
is never looked up or saved.

Django itself replaces bytes that are not UTF-8 in paths, query strings and form
fields, so an unpaired surrogate cannot arrive that way; JSON bodies are the API's
to check (its fields refuse NUL characters and surrogates with a 400).

A cookie whose name or value holds such text (a quoted cookie may spell a NUL as
``\\000``) cannot have been set by this site: it is ignored, as an unknown session
would be, rather than looked up.

Listed early in ``MIDDLEWARE``: its cookie check runs before ``SessionMiddleware``
reads the session cookie, and its ``process_view`` before the others' (CSRF's
included). Paths that match no URL pattern never reach ``process_view``; they are
Django's ordinary 404.
https://docs.djangoproject.com/en/5.2/topics/http/middleware/#process-view
"""

import json

from django.core.exceptions import SuspiciousOperation
from django.http import JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render

from .api_framework import error_body
from .errors import ErrorCode
from .text import storable_problem

API_NAMESPACE = "api"
FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _shown(name: str) -> str:
    """A parameter name quoted for a message, its NUL characters and surrogates escaped."""
    return json.dumps(name, ensure_ascii=False)


def _field_problem(fields) -> tuple[str, str] | None:
    """(name, problem) of the first of ``fields`` ((name, [value, ...]) pairs) whose name
    or one of whose values the database cannot store, or None."""
    for name, values in fields:
        for text in (name, *values):
            if problem := storable_problem(text):
                return name, problem
    return None


def _form_fields(request, view_func) -> list:
    """The POST form's fields and uploaded files' names; none for other bodies.

    Most views have their form read by ``CsrfViewMiddleware`` anyway: a form Django
    cannot parse is a 400 here as it would be there. A CSRF-exempt view (the API) may
    read the body itself, which it no longer can once Django has parsed the form from
    the stream: for those the form is parsed from a copy of the body, and a body too
    large or malformed to parse is left to the view to refuse (the API: not JSON)."""
    if request.method != "POST" or request.content_type not in FORM_CONTENT_TYPES:
        return []
    exempt = getattr(view_func, "csrf_exempt", False)
    try:
        if exempt:
            request.body  # noqa: B018  (keeps the copy the view reads)
        files = [(name, [f.name for f in uploads]) for name, uploads in request.FILES.lists()]
        return [*request.POST.lists(), *files]
    except (MultiPartParserError, SuspiciousOperation):  # RequestDataTooBig among them
        if exempt:
            return []
        raise


def _refusal(request, *, status: int, message: str, errors: dict | None = None):
    if API_NAMESPACE in request.resolver_match.namespaces:
        if status == 400:
            body = error_body(message=message, code=ErrorCode.INVALID, errors=errors or {})
        else:
            body = error_body(message=message, code=ErrorCode.NOT_FOUND)
        return JsonResponse(body, status=status)
    return render(request, f"{status}.html", {"reason": message}, status=status)


class UnstorableValues:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        for name, value in list(request.COOKIES.items()):
            if storable_problem(name) or storable_problem(value):
                del request.COOKIES[name]
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if problem := storable_problem(request.path):
            return _refusal(
                request,
                status=404,
                message=f"This address {problem}, so it is not the address of any page.",
            )
        found = _field_problem(request.GET.lists())
        where = "The link's parameter"
        if found is None:
            found = _field_problem(_form_fields(request, view_func))
            where = "The form's field"
        if found is not None:
            name, problem = found
            return _refusal(
                request,
                status=400,
                message=f"{where} {_shown(name)} {problem}, which cannot be stored.",
                errors={name: [problem]},
            )
        return None
