"""The questionnaire page: the screening questionnaire before consent, a stage's
questionnaire once the stage is finished, and the end page of a screened-out person
(``annotator_page`` sends annotators here while one is due)."""

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from ..models import Questionnaire
from ..services.questionnaires import (
    questionnaire_respond,
    questionnaire_screened_out_return,
    questionnaire_step,
)
from .common import annotator_page, render_with_crowd_return


def answers_from_post(post) -> dict[int, list[str]]:
    """The raw answers of the form: ``q<question id>`` → its values (the service checks
    them); a name that is not ``q<digits>`` is not an answer."""
    return {
        int(name[1:]): post.getlist(name)
        for name in post
        if name.startswith("q") and name[1:].isdigit()
    }


def _rows(questionnaire: Questionnaire, given: dict[int, list[str]], errors: dict) -> list[dict]:
    return [
        {
            "question": q,
            "name": f"q{q.pk}",
            "given": given.get(q.pk, []),
            "errors": errors.get(f"q{q.pk}", []),
            "choices": [(str(c.pk), c.text) for c in q.choices.all()],
        }
        for q in questionnaire.questions.prefetch_related("choices")
    ]


@annotator_page(after=None)
def questionnaire(request: HttpRequest) -> HttpResponse:
    study, annotator = request.study, request.annotator
    step = questionnaire_step(annotator=annotator)
    if step is None:
        return redirect("studies:home", slug=study.slug)
    if step.screened_out:
        return render_with_crowd_return(
            request,
            "studies/annotate/screened_out.html",
            questionnaire_screened_out_return(annotator=annotator),
            {"study": study},
        )
    current = step.questionnaire
    given, errors = {}, {}
    if request.method == "POST":
        given = answers_from_post(request.POST)
        try:
            if request.POST.get("questionnaire") != str(current.pk):
                raise ValidationError(
                    "This page was out of date, so nothing was saved: please answer the "
                    "questions below."
                )
            questionnaire_respond(annotator=annotator, questionnaire=current, answers=given)
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        else:
            # Next: the end page when screened out, another due questionnaire, or home
            # (this page passes on to home when nothing is due).
            return redirect("studies:questionnaire", slug=study.slug)
    return render(
        request,
        "studies/annotate/questionnaire.html",
        {
            "study": study,
            "questionnaire": current,
            "rows": _rows(current, given, errors),
            "errors": errors.get("__all__", []),
        },
        status=422 if errors else 200,
    )
