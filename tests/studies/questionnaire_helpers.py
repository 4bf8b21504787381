"""Questionnaires for the tests: a screening questionnaire with one question of each
kind (the English question ends participation on "No"), and one after the first stage."""

from studies.models import Choice, Question, Questionnaire


def question(questionnaire, position, text, kind, *, required=True, choices=(), ending=()):
    q = Question.objects.create(
        questionnaire=questionnaire, position=position, text=text, kind=kind, required=required
    )
    for i, choice in enumerate(choices, start=1):
        Choice.objects.create(
            question=q, position=i, text=choice, ends_participation=choice in ending
        )
    return q


def screening(study) -> Questionnaire:
    q = Questionnaire.objects.create(study=study, name="Screening", placement="screening")
    question(
        q, 1, "Is English your first language?", "single", choices=["Yes", "No"], ending=["No"]
    )
    question(
        q,
        2,
        "Which have you studied?",
        "multiple",
        required=False,
        choices=["Counselling", "Linguistics", "Neither"],
        ending=["Counselling"],
    )
    question(q, 3, "How often do you read online forums?", "scale")
    question(q, 4, "Anything else we should know?", "text", required=False)
    return q


def after_stage(study, position=1) -> Questionnaire:
    q = Questionnaire.objects.create(
        study=study,
        name=f"After stage {position}",
        placement="after_stage",
        stage=study.stages.get(position=position),
    )
    question(q, 1, "Did you remember any response candidate?", "single", choices=["Yes", "No"])
    question(q, 2, "How hard was the stage?", "scale")
    return q


def ids(questionnaire) -> dict[str, int]:
    """Question position → id, choice text → id (as "position:text")."""
    out = {}
    for q in questionnaire.questions.all():
        out[str(q.position)] = q.pk
        for c in q.choices.all():
            out[f"{q.position}:{c.text}"] = c.pk
    return out


def post_data(questionnaire, answers: dict) -> dict:
    """Form data: {position: value or [values]} (choice texts are turned into ids)."""
    m = ids(questionnaire)
    data = {"questionnaire": str(questionnaire.pk)}
    for position, value in answers.items():
        values = value if isinstance(value, list) else [value]
        data[f"q{m[str(position)]}"] = [str(m.get(f"{position}:{v}", v)) for v in values]
    return data


def consent(*annotators) -> None:
    """The annotators accept the study's current information sheet (their screening
    answers count from then on)."""
    from studies.services import annotator_consent, consent_version_current

    for annotator in annotators:
        version = consent_version_current(study=annotator.study)
        annotator_consent(annotator=annotator, version=version)
