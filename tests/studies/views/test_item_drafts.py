"""Item drafts through the test client: kept, shown again until the item is saved, never
an answer (no judgement, nothing exported or analysed), and every bad request refused
with its message and nothing written."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from analysis.selectors.judgements import judgements_frame
from studies.exports import export_row_count
from studies.exports.options import ExportOptions
from studies.models import DRAFT_MAX_CHARS, Assignment, ItemDraft, Judgement, Study
from studies.services import (
    annotators_create,
    assignment_claim,
    assignment_reject,
    assignment_submit,
)
from studies.services.privacy import study_personal_data_counts, study_purge_personal_data
from tests.factories import StaffUserFactory
from tests.studies.views.test_annotate import (  # noqa: F401 (fixtures)
    annotator,
    assignment,
    good_answer,
    item_url,
    open_study,
    ready,
)

HX = {"HTTP_HX_REQUEST": "true"}


def draft_url(assignment, number):
    return reverse("studies:item_draft", args=["pilot", assignment.pk, number])


def categories_of(study, n=2):
    return [c.slug for c in study.categories.order_by("order", "bit")[:n]]


def test_a_draft_is_kept_and_fills_the_item_again_until_it_is_saved(client, open_study, assignment):
    slugs = categories_of(open_study)
    posted = {
        "coherent": "no",
        "categories": slugs,
        "most_evident": slugs[1],
        "revision": "0",
        "form_mode": "js",
        "seconds_spent": "3.2",
    }
    response = client.post(draft_url(assignment, 1), posted)
    assert response.status_code == 204
    draft = ItemDraft.objects.get(assignment=assignment, number=1)
    # Only the choices: how the page was sent is not kept.
    assert draft.fields == {"coherent": ["no"], "categories": slugs, "most_evident": [slugs[1]]}
    assert not Judgement.objects.filter(assignment=assignment).exists()

    page = client.get(item_url(assignment, 1)).content.decode()
    assert "data-draft-restored" in page
    assert 'name="coherent" data-key="n" value="no" checked' in page.replace("  ", " ")
    for slug in slugs:
        assert f'value="{slug}" checked' in page
    # A later change replaces it (one row per item).
    client.post(draft_url(assignment, 1), {"coherent": "yes", "revision": "0"})
    assert ItemDraft.objects.get(assignment=assignment).fields == {"coherent": ["yes"]}

    # Saving the item makes the draft stale: the saved answer shows, without the note.
    saved = client.post(item_url(assignment, 1), {**good_answer(assignment, 1), "revision": 0})
    assert saved.status_code == 302
    page = client.get(item_url(assignment, 1)).content.decode()
    assert "data-draft-restored" not in page


def test_a_draft_is_never_counted_exported_or_analysed(client, open_study, assignment):
    """Every item saved, then each changed in a draft only (No, where the saved answers
    say Yes, but for the attention check): the judgements stay as saved, and once the
    batch is submitted, the export and the analysis show the saved answers."""
    for number in range(1, len(assignment.order) + 1):
        client.post(item_url(assignment, number), good_answer(assignment, number))
    saved = list(Judgement.objects.filter(assignment=assignment).order_by("pk").values())
    slug = categories_of(open_study, 1)[0]
    for number in range(1, len(assignment.order) + 1):
        changed = {"coherent": "no", "categories": [slug], "revision": "1"}
        assert client.post(draft_url(assignment, number), changed).status_code == 204
    assert ItemDraft.objects.filter(assignment=assignment).count() == len(assignment.order)
    assert list(Judgement.objects.filter(assignment=assignment).order_by("pk").values()) == saved
    assignment_submit(assignment=assignment)
    options = ExportOptions(fmt="published")
    rows = export_row_count(study=open_study, options=options, instrument="coherence")
    assert rows == len(assignment.order) - 1  # the attention check is not published
    frame = judgements_frame(study_id=open_study.pk)
    assert len(frame) == rows
    assert frame["coherent"].all()  # as saved: Yes everywhere, never the drafts' No


def test_submitting_the_batch_drops_its_drafts(client, assignment):
    for number in range(1, len(assignment.order) + 1):
        client.post(item_url(assignment, number), {**good_answer(assignment, number)})
    client.post(draft_url(assignment, 2), {"coherent": "no", "revision": "1"})
    assert ItemDraft.objects.filter(assignment=assignment).exists()
    assignment_submit(assignment=assignment)
    assert not ItemDraft.objects.filter(assignment=assignment).exists()


def test_bad_drafts_are_refused_with_a_message_and_nothing_written(client, open_study, assignment):
    # Not the annotator's batch, or no such item: not found.
    other = annotators_create(group=open_study.groups.get(name="Expert"), count=1)[0]
    other.consented_at = other.tutorial_completed_at = timezone.now()
    other.consented_version_id = assignment.annotator.consented_version_id
    other.save()
    theirs = assignment_claim(annotator=other)
    assert client.post(draft_url(theirs, 1), {"coherent": "no"}).status_code == 404
    assert client.post(draft_url(assignment, 0), {"coherent": "no"}).status_code == 404
    over = len(assignment.order) + 1
    assert client.post(draft_url(assignment, over), {"coherent": "no"}).status_code == 404
    # A bad revision, or too much text.
    bad = client.post(draft_url(assignment, 1), {"coherent": "no", "revision": "-1"})
    assert bad.status_code == 400
    assert bad.content.decode() == "The revision is a whole number, 0 or more."
    huge = client.post(draft_url(assignment, 1), {"description": "x" * (DRAFT_MAX_CHARS + 1)})
    assert huge.status_code == 400
    assert huge.content.decode() == f"A draft holds at most {DRAFT_MAX_CHARS:,} characters."
    # A GET is not a draft.
    assert client.get(draft_url(assignment, 1)).status_code == 405
    # A batch that takes no more answers.
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.EXPIRED, expired_at=timezone.now()
    )
    closed = client.post(draft_url(assignment, 1), {"coherent": "no"})
    assert closed.status_code == 409
    assert "can no longer be changed" in closed.content.decode()
    assert not ItemDraft.objects.exists()


def test_the_database_refuses_an_oversized_draft_or_item_zero(assignment):
    for fields, number in (({"description": ["x" * DRAFT_MAX_CHARS]}, 1), ({}, 0)):
        with pytest.raises(IntegrityError), transaction.atomic():
            ItemDraft.objects.create(
                assignment=assignment,
                number=number,
                base_revision=0,
                fields=fields,
                updated_at=timezone.now(),
            )
    assert not ItemDraft.objects.exists()


def test_the_personal_data_purge_deletes_unsaved_drafts(client, open_study, assignment):
    client.post(draft_url(assignment, 1), {"coherent": "no", "description": "My own words"})
    Study.objects.filter(pk=open_study.pk).update(status=Study.Status.CLOSED)
    open_study.refresh_from_db()
    assert study_personal_data_counts(study=open_study)["unsaved item drafts"] == 1
    purge = study_purge_personal_data(study=open_study, by=StaffUserFactory())
    assert purge.deleted["unsaved item drafts"] == 1
    assert not ItemDraft.objects.exists()


def test_a_post_without_choices_deletes_the_draft(client, assignment):
    client.post(draft_url(assignment, 1), {"coherent": "no", "revision": "0"})
    assert ItemDraft.objects.filter(assignment=assignment).count() == 1
    gone = client.post(draft_url(assignment, 1), {"revision": "0"})
    assert gone.status_code == 204
    assert not ItemDraft.objects.filter(assignment=assignment).exists()


def test_a_batch_that_expires_or_is_rejected_drops_its_drafts(client, open_study, assignment):
    client.post(draft_url(assignment, 1), {"coherent": "no", "description": "My words"})
    later = timezone.now() + timedelta(days=1)
    assert Assignment.objects.filter(pk=assignment.pk).overdue(later).expire(later) == 1
    assert not ItemDraft.objects.exists()
    other = annotators_create(group=open_study.groups.get(name="Expert"), count=1)[0]
    other.consented_at = other.tutorial_completed_at = timezone.now()
    other.consented_version_id = assignment.annotator.consented_version_id
    other.save()
    theirs = assignment_claim(annotator=other)
    ItemDraft.objects.create(
        assignment=theirs, number=1, base_revision=0, fields={}, updated_at=timezone.now()
    )
    assignment_reject(assignment=theirs, by=StaffUserFactory(), reason="Not done seriously.")
    assert not ItemDraft.objects.exists()


def test_a_nul_character_is_refused_before_the_draft_view(client, assignment):
    response = client.post(draft_url(assignment, 1), {"description": "bad\x00text"})
    assert response.status_code == 400
    assert not ItemDraft.objects.exists()


def test_a_draft_overtaken_by_a_later_one_of_the_page_does_not_replace_it(client, assignment):
    """A beacon sent as the page closes can arrive before the request sent just earlier:
    the page's clock orders them."""
    newer = {"coherent": "no", "categories": ["off_topic"], "draft_sent": "2000"}
    older = {"coherent": "yes", "draft_sent": "1000"}
    assert client.post(draft_url(assignment, 1), newer).status_code == 204
    assert client.post(draft_url(assignment, 1), older).status_code == 204
    draft = ItemDraft.objects.get(assignment=assignment)
    assert draft.fields == {"coherent": ["no"], "categories": ["off_topic"]}
    assert draft.sent_ms == 2000
    bad = client.post(draft_url(assignment, 1), {"coherent": "yes", "draft_sent": "soon"})
    assert bad.status_code == 400
    assert bad.content.decode() == "When the draft was sent is a whole number."
    assert ItemDraft.objects.get(assignment=assignment).fields["coherent"] == ["no"]
