"""A study with a training quiz, for the quiz's tests (the client and the browser)."""

from django.utils import timezone

from studies.models import ErrorCategory, Study, TrainingItem, TrainingQuiz
from studies.services import annotators_create, consent_version_current

TURNS = [
    {"role": "client", "text": "I've been drinking more since I lost my job."},
    {"role": "therapist", "text": "How has that been for you?"},
    {"role": "client", "text": "Honestly, it scares me. My kids notice."},
]

#: (expected coherent, required category slugs, wrong category slugs): answered right
#: by RIGHT_ANSWERS.
ITEMS = [
    (True, (), ()),
    (False, ("off_topic",), ()),
    (True, (), ()),
    (False, ("parroting",), ("off_topic",)),
    (True, (), ()),
]
RIGHT_ANSWERS = [
    {"coherent": "yes", "empathy": "4"},
    {"coherent": "no", "categories": ["off_topic"]},
    {"coherent": "yes", "empathy": "5"},
    # every required category, plus one neither required nor wrong
    {"coherent": "no", "categories": ["parroting", "malformed"], "most_evident": "parroting"},
    {"coherent": "yes", "empathy": "3"},
]
WRONG_ANSWER = {"coherent": "no", "categories": ["malformed"]}


def quiz_add(
    study: Study,
    *,
    pass_mark: int = 80,
    attempts: int = 2,
    items_per_attempt: int | None = None,
    rounds: int = 1,
) -> list[TrainingItem]:
    """Five practice items (the first on an existing context, the rest typed), repeated
    ``rounds`` times (positions 1, 2, ...: item p is answered right by
    ``right_answer(item)``)."""
    TrainingQuiz.objects.create(
        study=study, pass_mark=pass_mark, attempts=attempts, items_per_attempt=items_per_attempt
    )
    context = study.contexts.order_by("external_id").first()
    items = []
    for position in range(1, 5 * rounds + 1):
        coherent, required, wrong = ITEMS[(position - 1) % 5]
        item = TrainingItem.objects.create(
            study=study,
            position=position,
            context=context if position == 1 else None,
            turns=[] if position == 1 else TURNS,
            text=f"Practice candidate {position}: it sounds like your drinking worries you.",
            expected_coherent=coherent,
            explanation=f"Explanation {position}: what the client said supports this.",
        )
        categories = ErrorCategory.objects.filter(study=study)
        item.required_categories.set(categories.filter(slug__in=required))
        item.wrong_categories.set(categories.filter(slug__in=wrong))
        items.append(item)
    return items


def right_answer(item: TrainingItem) -> dict:
    """The form data of a right answer to ``item`` (made by ``quiz_add``)."""
    return RIGHT_ANSWERS[(item.position - 1) % 5]


def annotator_ready_for_quiz(study: Study, group: str = "Layperson"):
    """A new annotator who consented and did the tutorial."""
    annotator = annotators_create(group=study.groups.get(name=group), count=1)[0]
    annotator.consented_version = consent_version_current(study=study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    return annotator
