"""A study with a training quiz, for the quiz's tests (the client and the browser)."""

from django.utils import timezone

from studies.models import ErrorCategory, Study, TrainingItem, TrainingQuiz
from studies.services import annotators_create, consent_version_current

TURNS = [
    {"role": "client", "text": "I've been drinking more since I lost my job."},
    {"role": "therapist", "text": "How has that been for you?"},
    {"role": "client", "text": "Honestly, it scares me. My kids notice."},
]

#: (expected coherent, expected category slugs): answered right by RIGHT_ANSWERS.
ITEMS = [
    (True, ()),
    (False, ("off_topic",)),
    (True, ()),
    (False, ("dialogue_contradicting", "parroting")),
    (True, ()),
]
RIGHT_ANSWERS = [
    {"coherent": "yes", "empathy": "4"},
    {"coherent": "no", "categories": ["off_topic"]},
    {"coherent": "yes", "empathy": "5"},
    # at least one of the expected categories is enough (plus one not expected)
    {"coherent": "no", "categories": ["parroting", "malformed"], "most_evident": "parroting"},
    {"coherent": "yes", "empathy": "3"},
]
WRONG_ANSWER = {"coherent": "no", "categories": ["malformed"]}


def quiz_add(study: Study, *, pass_mark: int = 80, attempts: int = 2) -> list[TrainingItem]:
    """Five practice items (the first on an existing context, the rest typed)."""
    TrainingQuiz.objects.create(study=study, pass_mark=pass_mark, attempts=attempts)
    context = study.contexts.order_by("external_id").first()
    items = []
    for position, (coherent, slugs) in enumerate(ITEMS, start=1):
        item = TrainingItem.objects.create(
            study=study,
            position=position,
            context=context if position == 1 else None,
            turns=[] if position == 1 else TURNS,
            text=f"Practice candidate {position}: it sounds like your drinking worries you.",
            expected_coherent=coherent,
            explanation=f"Explanation {position}: what the client said supports this.",
        )
        item.expected_categories.set(ErrorCategory.objects.filter(study=study, slug__in=slugs))
        items.append(item)
    return items


def annotator_ready_for_quiz(study: Study, group: str = "Layperson"):
    """A new annotator who consented and did the tutorial."""
    annotator = annotators_create(group=study.groups.get(name=group), count=1)[0]
    annotator.consented_version = consent_version_current(study=study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    return annotator
