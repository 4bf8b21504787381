"""A stage's gate set on the stage's page: it decides the items whose ratings are in
at once; every refusal says why and changes nothing; the rule is locked once the gated
stage has a claimed batch."""

import re
from datetime import timedelta

from django.urls import reverse

from studies.models import GateDecision, StageGate, Study
from studies.protocol import GATE_LIKERT_MEAN_AT_LEAST, GATE_MAJORITIES_DIFFER
from studies.services import assignment_claim, assignment_reject
from tests.conftest import form_data
from tests.studies.gate_fixtures import T0, batch_of, gated, lay_judge  # noqa: F401
from tests.studies.services.test_assignments import consented


def _page(admin_client, stage):
    return admin_client.get(reverse("admin:studies_stage_change", args=[stage.pk]))


def _post(admin_client, stage, **changes):
    data = form_data(_page(admin_client, stage))
    data.update(changes)
    return admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)


def _gate_fields(prefix="gate", **values) -> dict:
    fields = {
        f"{prefix}-TOTAL_FORMS": 1,
        f"{prefix}-INITIAL_FORMS": 0,
        f"{prefix}-0-min_passed": 1,
    }
    fields.update({f"{prefix}-0-{name}": value for name, value in values.items()})
    return fields


def test_a_gate_set_on_the_page_decides_the_items_already_rated(admin_client, gated):
    StageGate.objects.filter(stage__position=2).delete()
    laypeople = consented(gated, "Layperson", count=3)
    judged = [
        lay_judge(person, batch_of(gated, 1, "dlg-1"), number)
        for number, person in enumerate(laypeople)
    ]
    stage = gated.stages.get(position=2)
    page = _page(admin_client, stage).content.decode()
    assert 'name="gate-TOTAL_FORMS"' in page
    lay = gated.groups.get(name="Layperson")
    response = _post(
        admin_client,
        stage,
        **_gate_fields(
            source_stage=gated.stages.get(position=1).pk,
            rule="majority_coherent",
            deciding_group=lay.pk,
        ),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    gate = StageGate.objects.get(stage=stage)
    assert gate.decisions.count() == 3
    assert batch_of(gated, 2, "dlg-1") is not None
    assert "3 items decided, 2 passed." in _page(admin_client, stage).content.decode()
    assignment_reject(assignment=judged[0], reason="Rushed through.")
    assert (
        "3 items decided, 2 passed. 3 of them rest on a batch rejected since (the decision "
        "stands)." in _page(admin_client, stage).content.decode()
    )
    assert gate.decisions.filter(passed=True).count() == 2


def test_a_gate_the_rule_cannot_read_is_refused_and_nothing_changes(admin_client, gated):
    StageGate.objects.filter(stage__position=2).delete()
    stage = gated.stages.get(position=2)
    first = gated.stages.get(position=1)
    lay = gated.groups.get(name="Layperson")
    likert = _post(
        admin_client,
        stage,
        **_gate_fields(
            source_stage=first.pk,
            rule=GATE_LIKERT_MEAN_AT_LEAST,
            deciding_group=lay.pk,
            threshold=3,
        ),
    )
    assert likert.status_code == 200
    page = likert.content.decode()
    assert "The Likert rule needs the dimension" in page
    differ = _post(
        admin_client,
        stage,
        **_gate_fields(source_stage=first.pk, rule=GATE_MAJORITIES_DIFFER, deciding_group=lay.pk),
    )
    assert "The rule comparing groups needs a second group" in differ.content.decode()
    expert = gated.groups.get(name="Expert")
    outsider = _post(
        admin_client,
        stage,
        **_gate_fields(source_stage=first.pk, rule="majority_coherent", deciding_group=expert.pk),
    )
    assert "Expert does not take part in Lay stage." in outsider.content.decode()
    later = _post(
        admin_client,
        stage,
        **_gate_fields(
            source_stage=gated.stages.get(position=3).pk,
            rule="majority_coherent",
            deciding_group=lay.pk,
        ),
    )
    assert "Select a valid choice" in later.content.decode()  # not an earlier stage
    assert not StageGate.objects.filter(stage=stage).exists()
    assert not GateDecision.objects.exists()


def test_a_gate_is_locked_once_its_stage_has_a_claimed_batch(admin_client, gated):
    laypeople = consented(gated, "Layperson", count=3)
    for number, person in enumerate(laypeople):
        lay_judge(person, batch_of(gated, 1, "dlg-1"), number)
    (expert,) = consented(gated, "Expert")
    assignment_claim(annotator=expert, now=T0 + timedelta(minutes=10))
    stage = gated.stages.get(position=2)
    gate = StageGate.objects.get(stage=stage)
    decisions = list(gate.decisions.values_list("pk", "passed"))
    data = form_data(_page(admin_client, stage))
    data["gate-0-rule"] = "majority_incoherent"
    response = admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)
    assert response.status_code == 200
    assert "its decisions stand" in response.content.decode()
    data["gate-0-rule"] = "majority_coherent"
    data["gate-0-DELETE"] = "on"
    removed = admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)
    assert "The gate cannot be removed" in removed.content.decode()
    gate.refresh_from_db()
    assert gate.rule == "majority_coherent"
    assert list(gate.decisions.values_list("pk", "passed")) == decisions


def _ready(study) -> None:
    """The tutorial an open study's page needs before it saves (so that the only
    refusal left is the one tested)."""
    Study.objects.filter(pk=study.pk).update(
        tutorial_intro="You will judge response candidates.",
        tutorial_example_turns=[{"role": "client", "text": "I barely slept."}],
        tutorial_example_notes="A coherent reflection.",
        tutorial_empathy_explanation="Then say how much you agree.",
    )


def _refusal(response) -> str:
    assert response.status_code == 200
    return response.content.decode().replace("&#x27;", "'")


def test_a_change_that_would_undo_a_gate_is_refused_and_nothing_changes(admin_client, gated):
    lay_stage = gated.stages.get(position=1)
    expert = gated.groups.get(name="Expert")
    StageGate.objects.filter(stage__position=2).update(min_votes=2)

    moved = _refusal(_post(admin_client, lay_stage, position=4))
    assert (
        "The gate of Good reflection decides on Lay stage's answers: Lay stage stays "
        "before Good reflection." in moved
    )
    others = _refusal(_post(admin_client, lay_stage, groups=[expert.pk]))
    assert (
        "Layperson decides the gate of Good reflection, so it keeps taking part in "
        "Lay stage." in others
    )
    fewer = _refusal(_post(admin_client, lay_stage, overlap_k=1))
    assert (
        "The gate of Good reflection needs a majority of 2 raters: Lay stage keeps at "
        "least 2 per item." in fewer
    )
    gated_stage = gated.stages.get(position=3)
    # The study's page, where every stage's row is saved at once.
    _ready(gated)
    url = reverse("admin:studies_study_change", args=[gated.pk])
    data = form_data(admin_client.get(url))
    row = next(
        key.removesuffix("-id")
        for key, value in data.items()
        if key.startswith("stages-") and key.endswith("-id") and str(value) == str(lay_stage.pk)
    )
    data[f"{row}-position"] = 9
    on_study_page = _refusal(admin_client.post(url, data))
    assert set(re.findall(r"<li>(The gate of .*?)</li>", on_study_page)) == {
        "The gate of Good reflection decides on Lay stage's answers: Lay stage stays "
        "before Good reflection.",
        "The gate of Adjudication decides on Lay stage's answers: Lay stage stays before "
        "Adjudication.",
    }
    assert "Annotators cannot start yet" not in on_study_page  # the only refusal

    lay_stage.refresh_from_db()
    assert (lay_stage.position, lay_stage.overlap_k) == (1, 3)
    assert list(lay_stage.groups.values_list("name", flat=True)) == ["Layperson"]
    assert gated.stages.get(pk=gated_stage.pk).position == 3


def test_a_majority_no_deciding_stage_can_reach_is_refused(admin_client, gated):
    StageGate.objects.filter(stage__position=2).delete()
    stage = gated.stages.get(position=2)
    lay = gated.groups.get(name="Layperson")
    response = _post(
        admin_client,
        stage,
        **_gate_fields(
            source_stage=gated.stages.get(position=1).pk,
            rule="majority_coherent",
            deciding_group=lay.pk,
            min_votes=4,
        ),
    )
    assert (
        "Lay stage has 3 raters per item (k): a majority of 4 could never be reached."
        in _refusal(response)
    )
    assert not StageGate.objects.filter(stage=stage).exists()


def test_a_gated_stages_batch_cannot_be_deleted(admin_client, gated):
    laypeople = consented(gated, "Layperson", count=3)
    for number, person in enumerate(laypeople):
        lay_judge(person, batch_of(gated, 1, "dlg-1"), number)
    batch = batch_of(gated, 2, "dlg-1")
    page = admin_client.get(reverse("admin:studies_batch_delete", args=[batch.pk]))
    assert page.status_code == 403
    listing = reverse("admin:studies_batch_changelist")
    response = admin_client.post(
        listing,
        {"action": "delete_selected", "_selected_action": [batch.pk], "post": "yes"},
        follow=True,
    )
    assert "Nothing was deleted" in response.content.decode()
    assert batch_of(gated, 2, "dlg-1") is not None
    # A batch of an ungated stage still goes, after the confirmation page.
    plain = batch_of(gated, 1, "dlg-2")
    response = admin_client.post(
        listing, {"action": "delete_selected", "_selected_action": [plain.pk], "post": "yes"}
    )
    assert response.status_code == 302
    assert batch_of(gated, 1, "dlg-2") is None


def test_deleting_a_gated_stage_frees_its_deciding_stage_in_the_same_save(admin_client, gated):
    _ready(gated)
    url = reverse("admin:studies_study_change", args=[gated.pk])
    data = form_data(admin_client.get(url))
    rows = {
        str(value): key.removesuffix("-id")
        for key, value in data.items()
        if key.startswith("stages-") and key.endswith("-id") and value
    }
    first, good, adjudication = gated.stages.order_by("position")
    for stage in (good, adjudication):
        data[f"{rows[str(stage.pk)]}-DELETE"] = "on"
    data[f"{rows[str(first.pk)]}-position"] = 9
    response = admin_client.post(url, data)
    assert response.status_code == 302, re.findall(
        r"errorlist[^>]*>(.*?)</ul>", _refusal(response), re.S
    )
    assert list(gated.stages.values_list("position", flat=True)) == [9]
    assert not StageGate.objects.exists()
