"""The coding page (staff): one free-text description at a time, with its response
candidate and conversation; the coder ticks codes of the study's codebook (or marks
the description uninformative), grows the codebook in place, and moves on; once every
description is coded, the page says what is left to the other coders. htmx swaps the
panel (and, out of band, what beside it depends on the description or the codebook);
every control is also a plain form or link. Each coder sees and writes only their own
coding (``studies.services.coding``). The page is for roles that may code the study's
descriptions (``Capability.CODE``: coders see nothing else of the study), who also grow
its codebook; the codes download holds every coder's rows (``Capability.READ_ROWS``).

Coding is blind unless the study's ``coding_reveals_sources`` is on: the page then
leaves out each candidate's source and generation settings and the annotator's group,
and offers no filter by source, since coders are often comparing exactly those."""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..exports import codes_filename, codes_rows, file_clean
from ..models import Stage
from ..permissions import Capability, user_may
from ..selectors.coding import (
    CodingPosition,
    code_place,
    codebook,
    coder_of,
    coding_left_to_others,
    coding_position,
    coding_stage,
    description_for_coding,
    descriptions_filtered,
    judgement_by_id,
    own_coding,
    stage_description_sources,
    study_code,
    study_codes,
)
from ..services.coding import code_create, coder_join, coding_save
from .common import staff_page
from .exports import bad_request, rows_response

#: Number keys toggle the first ten codes: 1-9, then 0.
SHORTCUT_KEYS = "1234567890"
NO_JUDGEMENT_MESSAGE = "Choose a description to code."


#: The coding page and its codebook form.
coding_page = staff_page(may=Capability.CODE)


def _stage(slug: str, position: int) -> Stage:
    stage = coding_stage(slug=slug, position=position)
    if stage is None:
        raise Http404("No such stage.")
    return stage


def _filters(data, *, stage: Stage) -> dict[str, str]:
    """The source and code filters, unknown values dropped (and the source in blind
    coding)."""
    source = (data.get("source") or "").strip()
    code = (data.get("code") or "").strip()
    if source and (
        not stage.study.coding_reveals_sources
        or source not in stage_description_sources(stage=stage)
    ):
        source = ""
    if code and study_code(study_id=stage.study_id, slug=code) is None:
        code = ""
    return {key: value for key, value in (("source", source), ("code", code)) if value}


def _url(stage: Stage, filters: dict[str, str], item: int | None = None, done=False) -> str:
    """The page at ``item``, or at the all-coded state with ``done``."""
    query = {**filters, **({"item": item} if item else {}), **({"done": 1} if done else {})}
    url = reverse("studies:coding", args=[stage.study.slug, stage.position])
    return f"{url}?{urlencode(query)}" if query else url


def _position(*, stage, coder, filters) -> CodingPosition:
    """Where ``coder`` is in the stage's descriptions under ``filters``."""
    code = study_code(study_id=stage.study_id, slug=filters["code"]) if "code" in filters else None
    descriptions = descriptions_filtered(
        stage=stage, coder=coder, source=filters.get("source", ""), code=code
    )
    return coding_position(descriptions=descriptions, coder=coder)


def _codebook(codes, chosen_slugs=()) -> list[tuple]:
    """(code, its number key, ticked) for each code of the codebook."""
    return [
        (c, SHORTCUT_KEYS[i] if i < len(SHORTCUT_KEYS) else "", c.slug in chosen_slugs)
        for i, c in enumerate(codes)
    ]


def _panel_context(
    request, *, stage, coder, filters, item_id, chosen=None, errors=None, done=False
):
    """The panel for ``item_id``, else the first description not coded yet, else
    (every description coded) the all-coded state. A code filter lists descriptions
    to re-read, so it opens at its first one unless ``done`` (the coder just saved
    its last). ``chosen``: the ticks of a refused save of ``item_id``, kept only
    when that is the description shown."""
    study = stage.study
    position = _position(stage=stage, coder=coder, filters=filters)
    if item_id is None or position.index(item_id) is None:
        item_id = position.first_uncoded()
        if item_id is None and "code" in filters and not done and position.ids:
            item_id = position.ids[0]
        chosen = None  # another description: the posted ticks were not for it
    item = None
    if item_id is not None:
        item = description_for_coding(judgement_id=item_id)
    own, own_codes = (
        own_coding(judgement_id=item_id, coder=coder) if coder and item_id else (None, set())
    )
    if chosen is None:
        chosen = {"codes": own_codes, "uninformative": bool(own and own.uninformative)}
    codes = codebook(study=study)
    previous = position.neighbour(item_id, -1) if item_id else None
    following = position.neighbour(item_id, +1) if item_id else None
    all_coded = item is None and position.all_coded
    return {
        "study": study,
        "stage": stage,
        "filters": filters,
        "item": item,
        "turns": item.assignment.batch.context.turns if item else [],
        "reveal": study.coding_reveals_sources,
        "own": own,
        "chosen": chosen,
        "errors": errors or {},
        "codebook": _codebook(codes, chosen["codes"]),
        "number": (position.index(item_id) or 0) + 1,
        "position": position,
        "previous_url": _url(stage, filters, previous) if previous else "",
        "next_url": _url(stage, filters, following) if following else "",
        "action_url": _url(stage, filters, item_id),
        "all_coded": all_coded,
        "others": coding_left_to_others(stage=stage, coder=coder) if all_coded else [],
        "first_url": _url(stage, filters, position.ids[0]) if all_coded else "",
    }


def _render(request, context, *, status=200) -> HttpResponse:
    """The page, or for htmx the panel (with the code form's notice cleared and its
    description updated out of band)."""
    template = "studies/coding/_panel.html" if request.htmx else "studies/coding/page.html"
    study = context["study"]
    # Links to the study's other pages, for roles that may see the study (not coders).
    context["can_see_study"] = user_may(request.user, study, Capability.SEE)
    context["oob"] = bool(request.htmx)
    if not request.htmx:
        stage = context["stage"]
        context |= {
            "sources": stage_description_sources(stage=stage) if context["reveal"] else [],
            "can_download": user_may(request.user, study, Capability.READ_ROWS),
            "code_form": context.get("code_form", {}),
        }
    return render(request, template, context, status=status)


def _item_id(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@require_http_methods(["GET", "POST"])
@coding_page
def coding(request: HttpRequest, slug: str, position: int) -> HttpResponse:
    """GET: the description ``?item=`` (else the first this coder has not coded).
    POST: save this coder's coding of it, then the next description."""
    stage = _stage(slug, position)
    data = request.POST if request.method == "POST" else request.GET
    filters = _filters(data, stage=stage)
    coder = coder_of(study=stage.study, user=request.user)
    item_id = _item_id(data.get("item") or data.get("judgement"))
    if request.method == "GET":
        context = _panel_context(
            request,
            stage=stage,
            coder=coder,
            filters=filters,
            item_id=item_id,
            done=bool(request.GET.get("done")),
        )
        return _render(request, context)
    judgement = judgement_by_id(judgement_id=_item_id(request.POST.get("judgement")))
    if judgement is None:
        context = _panel_context(
            request,
            stage=stage,
            coder=coder,
            filters=filters,
            item_id=None,
            errors={"judgement": NO_JUDGEMENT_MESSAGE},
        )
        return _render(request, context, status=422)
    slugs = request.POST.getlist("codes")
    uninformative = request.POST.get("uninformative") in ("on", "1", "true")
    codes = study_codes(study=stage.study, slugs=slugs)
    chosen = {"codes": set(slugs), "uninformative": uninformative}
    unknown = set(slugs) - {c.slug for c in codes}
    # The next description comes from the list as it was before saving: the save may
    # take this one out of a code filter.
    before = _position(stage=stage, coder=coder, filters=filters)
    try:
        if unknown:
            raise ValidationError(
                {"codes": f"Not codes of this study: {', '.join(sorted(unknown))}."}
            )
        if judgement.assignment.stage_id != stage.pk:
            raise ValidationError({"judgement": "This answer belongs to another stage."})
        with transaction.atomic():  # a refused first coding leaves no coder behind
            coder = coder or coder_join(study=stage.study, user=request.user)
            coding_save(
                coder=coder,
                judgement=judgement,
                codes=codes,
                uninformative=uninformative,
                user=request.user,
            )
    except ValidationError as exc:
        context = _panel_context(
            request,
            stage=stage,
            coder=coder,
            filters=filters,
            item_id=judgement.pk,
            chosen=chosen,
            errors={key: " ".join(value) for key, value in exc.message_dict.items()},
        )
        return _render(request, context, status=422)
    following = before.neighbour(judgement.pk, +1)
    if following is None:
        following = _position(stage=stage, coder=coder, filters=filters).first_uncoded()
    done = following is None  # the last description saved and none left uncoded
    url = _url(stage, filters, following, done=done)
    if not request.htmx:
        messages.success(request, "Saved.")
        return redirect(url)
    context = _panel_context(
        request, stage=stage, coder=coder, filters=filters, item_id=following, done=done
    )
    context["saved"] = True
    response = _render(request, context)
    response["HX-Push-Url"] = url
    return response


@require_POST
@coding_page
def coding_code_add(request: HttpRequest, slug: str, position: int) -> HttpResponse:
    """Add a code to the codebook (slug, label, definition, example). htmx: the
    emptied form plus, out of band, the new code's checkbox (ticked) in the coding
    form, the codebook list and the code filter."""
    stage = _stage(slug, position)
    filters = _filters(request.POST, stage=stage)
    item_id = _item_id(request.POST.get("item"))
    fields = {
        name: request.POST.get(name, "") for name in ("slug", "label", "definition", "example")
    }
    try:
        code = code_create(study=stage.study, user=request.user, **fields)
    except ValidationError as exc:
        errors = {key: " ".join(value) for key, value in exc.message_dict.items()}
        if request.htmx:
            context = {
                "stage": stage,
                "filters": filters,
                "item_id": item_id,
                "code_form": fields,
                "code_errors": errors,
            }
            return render(request, "studies/coding/_code_form.html", context, status=422)
        coder = coder_of(study=stage.study, user=request.user)
        context = _panel_context(
            request, stage=stage, coder=coder, filters=filters, item_id=item_id
        )
        context |= {"code_form": fields, "code_errors": errors}
        return _render(request, context, status=422)
    if not request.htmx:
        messages.success(request, f'Added the code "{code.label}".')
        return redirect(_url(stage, filters, item_id))
    index = code_place(code=code)
    context = {
        "codebook": _codebook(codebook(study=stage.study)),
        "stage": stage,
        "filters": filters,
        "item_id": item_id,
        "code_form": {},
        "code_errors": {},
        "added": code,
        "added_key": SHORTCUT_KEYS[index] if index < len(SHORTCUT_KEYS) else "",
    }
    return render(request, "studies/coding/_code_form.html", context)


@require_GET
@staff_page(may=Capability.READ_ROWS)
def coding_export(request: HttpRequest, slug: str) -> HttpResponse:
    """The study's codes (``?stage=POSITION`` for one stage;
    ``?file=`` one of ``FILES``, ``file_clean``)."""
    study = request.study
    stage = None
    if request.GET.get("stage"):
        stage = coding_stage(slug=slug, position=_item_id(request.GET["stage"]) or 0)
        if stage is None:
            raise Http404("No such stage.")
    try:
        file = file_clean(request.GET.get("file"))
    except ValidationError as exc:
        return bad_request(ValidationError({"file": exc.messages}))
    return rows_response(
        rows=lambda: codes_rows(
            study=study, stage=stage, spreadsheet_safe=file == "csv-spreadsheet-safe"
        ),
        file=file,
        filename=codes_filename(study=study, stage=stage, file=file),
        sheet_name="codes",
    )
