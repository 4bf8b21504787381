"""What the annotation exports share: the rows read per chunk, and the dialogue
contexts as the published formats write them."""

import json

from ..models import DialogueContext, Study

CHUNK_SIZE = 5000


def published_contexts(study: Study) -> dict[int, str]:
    """Context id → the ``dialogue_context`` cell of the published formats: the turns
    as JSON objects of one key, the role (texts exact)."""
    return {
        pk: json.dumps([{t["role"]: t["text"]} for t in turns], ensure_ascii=False)
        for pk, turns in DialogueContext.objects.filter(study=study).values_list("id", "turns")
    }
