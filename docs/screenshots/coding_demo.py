"""Give the demo study descriptions to code, for the coding page's screenshot
(`make screenshots` runs it after load_demo; never on a real database).

A few counted No answers of the demo's first stage get an invented description (the
stage itself is left as it is, so the annotator screenshots do not change), the
codebook gets four codes, and the demo researcher codes the first three descriptions.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import transaction  # noqa: E402

from studies.models import Judgement, Study  # noqa: E402
from studies.selectors.coding import description_order  # noqa: E402
from studies.services.coding import code_create, coder_join, coding_save  # noqa: E402

DESCRIPTIONS = [
    "It talks about the client's job, but the client never mentioned work at all.",
    "Repeats the client's last sentence word for word and adds nothing.",
    "Not sure, it just feels off.",
    "Says the client wants to quit, but the client said the opposite a moment ago.",
    "The sentence stops in the middle and the grammar is broken.",
    "It assumes the client has children; nothing in the conversation says so.",
    "Answers a question nobody asked instead of reflecting what was said.",
    "Copies the therapist's question back as if it were a reflection.",
]
CODES = [
    ("invents_facts", "Invents facts", "States something the conversation never said."),
    ("contradicts", "Contradicts the client", "Says the opposite of what the client said."),
    ("parrots", "Parrots", "Repeats the client's or therapist's words without reflecting."),
    ("broken_text", "Broken text", "Unfinished or ungrammatical sentence."),
]


@transaction.atomic
def main() -> None:
    study = Study.objects.get(slug="demo")
    stage = study.stages.get(position=1)
    answers = (
        Judgement.objects.analysed()
        .filter(assignment__stage=stage, coherent=False)
        .order_by(*description_order())[: len(DESCRIPTIONS)]
    )
    for judgement, text in zip(answers, DESCRIPTIONS, strict=False):
        Judgement.objects.filter(pk=judgement.pk).update(error_description=text)
    codes = {}
    for slug, label, definition in CODES:
        codes[slug] = study.codes.filter(slug=slug).first() or code_create(
            study=study, slug=slug, label=label, definition=definition
        )
    coder = coder_join(study=study, user=get_user_model().objects.get(username="researcher"))
    described = (
        Judgement.objects.analysed().filter(assignment__stage=stage).exclude(error_description="")
    )
    first = list(described.order_by(*description_order())[:3])
    for judgement, chosen in zip(first, (["invents_facts"], ["parrots"], []), strict=True):
        coding_save(
            coder=coder,
            judgement=judgement,
            codes=[codes[c] for c in chosen],
            uninformative=not chosen,
        )


if __name__ == "__main__":
    main()
