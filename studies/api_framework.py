"""What every endpoint of the REST API shares: who may call it, the error format,
pagination, and the error bodies documented in the OpenAPI schema.

Errors are JSON: ``{"message": "<one sentence>", "code": "<ErrorCode>"}``, and for 400
also ``"errors"``, the field errors (``{"field": ["...", ...]}``; ``non_field_errors``
for the rest: at most ``MAX_LISTED_ERRORS`` of them, ``errors_omitted`` counting the
others, each message quoting at most ``MAX_MESSAGE_LENGTH`` characters). Clients tell errors apart by ``code`` (``studies.errors.API_ERROR_CODES``,
an enum in the schema); the message is for people. A service's
``django.core.exceptions.ValidationError`` becomes a 400 with its messages, so API
clients read the same rules as the admin and the dashboard, and with its code when it
is one of the API's (else ``invalid``).
"""

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, pagination, permissions, serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from .datafiles import MAX_REPORTED_PROBLEMS
from .errors import API_ERROR_CODES, ErrorCode
from .permissions import Capability, study_for_user, user_has_a_role

NON_FIELD_ERRORS = api_settings.NON_FIELD_ERRORS_KEY
# Ids in filters are database keys (bigint): larger numbers cannot match anything.
MAX_ID = 2**63 - 1

# --- permissions -------------------------------------------------------------------------


ROLE_NEEDED = "Only researchers (active staff accounts with a role in a study) can use the API."


class ResearcherPermission(permissions.BasePermission):
    """Researchers: active staff accounts with a role in some study (or superusers);
    tokens act as their user. An endpoint under a study's URL (``slug``) takes the study
    through ``study_for_user`` with the view's ``may`` (a ``Capability``): a 404 to a
    user without a role in it (as for no such study, so study names do not leak), a 403
    saying why to one whose role does not allow it; the study is then
    ``request.study``. Endpoints naming an object by id check the object's study
    themselves (``study_object_check``), lists across studies narrow their rows
    (``studies_where``). Annotators have no API access: their sessions carry no user,
    so they get a 401 like anyone without credentials."""

    message = ROLE_NEEDED

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated and user_has_a_role(user)):
            return False
        slug = view.kwargs.get("slug")
        if slug is not None:
            request.study = study_for_user(user, slug, view.may, view.study_queryset())
        return True


# Base of every API view: researchers only. (A comment, not a docstring: the schema
# takes each view's docstring as its description.)
class ResearcherApi(APIView):
    permission_classes = [ResearcherPermission]
    #: What the caller's role must allow in the study (studies.permissions.Capability).
    may: Capability = Capability.SEE

    def study_queryset(self):
        """Where ``request.study`` is read from (None: plain studies)."""
        return None


class ApiNotFound(ResearcherApi):
    """Any other path under /api/: a JSON 404 (after authentication, so anonymous callers
    learn nothing about which paths exist)."""

    schema = None  # not an endpoint of the schema

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise exceptions.NotFound("No such API endpoint; see /api/docs/ for the list.")


# --- request bodies ------------------------------------------------------------------------
# JSON bodies are parsed by studies.api_parsing.JSONParser (a module of its own: DRF
# loads its parsers while it defines APIView, which this module imports).


class RequestTooLarge(exceptions.APIException):
    status_code = 413
    default_code = ErrorCode.REQUEST_TOO_LARGE


def _too_large() -> RequestTooLarge:
    return RequestTooLarge(
        f"The request body is larger than the limit of "
        f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes."
    )


# --- errors --------------------------------------------------------------------------------


def _django_errors(exc: DjangoValidationError) -> dict:
    if hasattr(exc, "error_dict"):
        return {
            (NON_FIELD_ERRORS if key == "__all__" else key): messages
            for key, messages in exc.message_dict.items()
        }
    return {NON_FIELD_ERRORS: exc.messages}


def _leaves(errors, path: str = ""):
    """(field path, message) for every message of a nested DRF error structure."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(errors, list):
        for value in errors:
            yield from _leaves(value, path)
    else:
        yield path, str(errors)


#: An error body lists at most as many messages as an import reports problems
#: (``errors_omitted`` counts the rest) and quotes at most ``MAX_MESSAGE_LENGTH``
#: characters of each, so a huge input is not echoed back.
MAX_LISTED_ERRORS = MAX_REPORTED_PROBLEMS
MAX_MESSAGE_LENGTH = 300


def _shortened(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_LENGTH else text[: MAX_MESSAGE_LENGTH - 1] + "…"


def errors_capped(errors: dict) -> tuple[dict, int]:
    """The first ``MAX_LISTED_ERRORS`` messages of a nested error structure, in order
    and in their places, each shortened to ``MAX_MESSAGE_LENGTH``; and how many
    messages were left out."""
    left = MAX_LISTED_ERRORS
    omitted = 0

    def kept(node):
        nonlocal left, omitted
        if isinstance(node, dict):
            pairs = ((key, kept(value)) for key, value in node.items())
            return {key: value for key, value in pairs if value not in ({}, [], None)}
        if isinstance(node, list):
            return [value for value in map(kept, node) if value not in ({}, [], None)]
        if left == 0:
            omitted += 1
            return None
        left -= 1
        return _shortened(str(node))

    return kept(errors), omitted


def validation_message(errors: dict) -> str:
    """One sentence summing up field errors: the non-field errors themselves, a single
    field's message, or the names of the invalid fields."""
    if errors.get(NON_FIELD_ERRORS):
        return " ".join(message for _, message in _leaves(errors[NON_FIELD_ERRORS]))
    leaves = list(_leaves(errors))
    if len(leaves) == 1:
        field, message = leaves[0]
        return f"{field}: {message}" if field else message
    if not leaves:
        return "Invalid input."
    fields = list(dict.fromkeys(field.split(".")[0] for field, _ in leaves))
    return f"Invalid input in {', '.join(fields)}: see errors."


def _django_code(exc: DjangoValidationError) -> ErrorCode:
    """A service's refusal code when all its errors share one the API documents."""
    errors = (
        [e for errors in exc.error_dict.values() for e in errors]
        if hasattr(exc, "error_dict")
        else exc.error_list
    )
    codes = {e.code for e in errors}
    code = codes.pop() if len(codes) == 1 else None
    return ErrorCode(code) if code in API_ERROR_CODES else ErrorCode.INVALID


def _api_code(exc: exceptions.APIException) -> ErrorCode:
    """The code of a DRF exception: DRF's default codes are the API's."""
    if isinstance(exc, exceptions.ValidationError):
        return ErrorCode.INVALID
    return ErrorCode(exc.default_code)


def exception_handler(exc, context):
    """DRF's handler with the JSON error format of the module docstring. Unexpected
    exceptions are left to Django (a 500, logged with its traceback)."""
    code = None
    if isinstance(exc, DjangoValidationError):
        code = _django_code(exc)
        exc = exceptions.ValidationError(_django_errors(exc))
    elif isinstance(exc, RequestDataTooBig):  # Django's, on reading request.body
        exc = _too_large()
    elif isinstance(exc, Http404):  # as DRF's handler converts them
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = code or _api_code(exc)
    if isinstance(exc, exceptions.ValidationError):
        errors = (
            response.data if isinstance(response.data, dict) else {NON_FIELD_ERRORS: response.data}
        )
        errors, omitted = errors_capped(errors)
        response.data = error_body(
            message=validation_message(errors), code=code, errors=errors, omitted=omitted
        )
    else:
        detail = response.data.get("detail") if isinstance(response.data, dict) else None
        message = str(detail if detail is not None else exc)
        # A ParseError (malformed JSON) is a 400: it has (no) field errors as they do.
        errors = {} if response.status_code == 400 else None
        response.data = error_body(message=message, code=code, errors=errors)
    return response


def error_body(
    *, message: str, code: ErrorCode, errors: dict | None = None, omitted: int = 0, **extra
) -> dict:
    """An error body of the API (the module docstring): ``errors`` for 400s only, with
    ``errors_omitted`` when ``errors_capped`` left messages out."""
    body = {"message": _shortened(message), "code": code.value}
    if errors is not None:
        body["errors"] = errors
    if omitted:
        body["errors_omitted"] = omitted
    return {**body, **extra}


def validation_error_response(*, message: str, errors: dict, **extra) -> Response:
    """A 400 in the error format, for interfaces that report a service's own error
    type (the materials importer's issues)."""
    return Response(
        error_body(message=message, code=ErrorCode.INVALID, errors=errors, **extra), status=400
    )


#: The schema's ErrorCodeEnum (SPECTACULAR_SETTINGS names it): each code with its meaning.
API_ERROR_CHOICES = [(code.value, code.label) for code in API_ERROR_CODES]


class ErrorSerializer(serializers.Serializer):
    message = serializers.CharField(help_text="What went wrong, in one sentence.")
    code = serializers.ChoiceField(
        choices=API_ERROR_CHOICES,
        help_text="Why, for programs: stable values to tell errors apart (the message may "
        "be reworded).",
    )

    class Meta:
        ref_name = "Error"


class ValidationErrorSerializer(ErrorSerializer):
    errors = serializers.DictField(
        child=serializers.JSONField(),
        help_text='Messages per field: {"field": ["message", ...]}, nested for nested '
        'fields; "non_field_errors" for the rest.',
    )

    errors_omitted = serializers.IntegerField(
        required=False,
        help_text=f"How many messages were left out: at most {MAX_LISTED_ERRORS} are listed, "
        f"each quoting at most {MAX_MESSAGE_LENGTH} characters.",
    )

    class Meta:
        ref_name = "ValidationError"


def error_responses(*codes: int) -> dict:
    """Schema entries for the error statuses an operation can answer with. Every
    operation may answer 400: a request carrying text the database cannot store (a NUL
    character in any parameter) is refused before any view (``studies.unstorable``)."""
    codes = tuple(sorted({400, *codes}))
    described = {
        400: (
            ValidationErrorSerializer,
            "Invalid input: message and field errors (any parameter with a NUL character, "
            "which cannot be stored, included).",
        ),
        401: (ErrorSerializer, "No or invalid credentials (send `Authorization: Token <key>`)."),
        403: (
            ErrorSerializer,
            "Not a researcher, or the role in this study does not allow this (the "
            "message says why).",
        ),
        404: (
            ErrorSerializer,
            "No such study, object or page (a study you have no role in is none).",
        ),
        413: (ErrorSerializer, "The body is larger than the server accepts."),
        415: (ErrorSerializer, "The body is not JSON (send `Content-Type: application/json`)."),
    }
    return {code: OpenApiResponse(*described[code]) for code in codes}


# --- pagination ----------------------------------------------------------------------------


class PageNumberPagination(pagination.PageNumberPagination):
    """``?page=2&page_size=100``; small and medium lists."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class IdCursorPagination(pagination.CursorPagination):
    """``?cursor=...`` from the ``next`` link, ordered by id: stable while rows are
    added, and constant time per page however large the study (judgements)."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def decode_cursor(self, request):
        """DRF answers a malformed cursor with a 404 and lets a forged position reach
        the database; both are a 400 here."""
        try:
            cursor = super().decode_cursor(request)
        except exceptions.NotFound:
            raise exceptions.ValidationError({"cursor": [self.invalid_cursor_message]}) from None
        if cursor is not None and cursor.position is not None:
            try:
                position = int(cursor.position)
            except ValueError:
                position = None
            if position is None or not 0 <= position <= MAX_ID:
                raise exceptions.ValidationError({"cursor": [self.invalid_cursor_message]})
        return cursor


def paginated_response(*, paginator, serializer_class, queryset, request, view, context=None):
    page = paginator.paginate_queryset(queryset, request, view=view)
    data = serializer_class(page, many=True, context=context or {}).data
    return paginator.get_paginated_response(data)
