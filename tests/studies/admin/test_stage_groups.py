"""A stage's groups taking part, its own k and m, and groups' own waits, set in the
admin: on the stage's page and the study's stage rows; every refusal says why and
changes nothing."""

from datetime import timedelta

import pytest
from django.urls import reverse

from studies.models import Stage, StageGroupWait
from studies.services import annotators_create, assignment_create, study_create
from tests.conftest import form_data


def _page(admin_client, stage):
    return admin_client.get(reverse("admin:studies_stage_change", args=[stage.pk]))


def _post(admin_client, stage, **changes):
    data = form_data(_page(admin_client, stage))
    data.update(changes)
    return admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)


def _stored(stage):
    stage.refresh_from_db()
    return (
        sorted(stage.groups.values_list("name", flat=True)),
        stage.overlap_k,
        stage.batches_per_stage,
        list(StageGroupWait.objects.filter(stage=stage).values_list("group__name", "min_wait")),
    )


def test_the_groups_k_m_and_a_groups_own_wait_are_set_on_the_stages_page(
    admin_client, loaded_study
):
    stage = loaded_study.stages.get(position=2)
    expert = loaded_study.groups.get(name="Expert")
    page = _page(admin_client, stage).content.decode()
    for name in ("groups", "overlap_k", "batches_per_stage", "group_waits-TOTAL_FORMS"):
        assert f'name="{name}"' in page
    other = study_create(slug="other", title="Other", groups=["Outsider"])
    assert "Outsider" not in page  # only the stage's own study's groups
    response = _post(
        admin_client,
        stage,
        groups=[expert.pk],
        overlap_k=2,
        batches_per_stage=4,
        **{
            "group_waits-TOTAL_FORMS": 1,
            "group_waits-0-group": expert.pk,
            "group_waits-0-min_wait": "1 hour",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert _stored(stage) == (["Expert"], 2, 4, [("Expert", timedelta(hours=1))])
    assert (stage.k, stage.m) == (2, 4)
    # The study's page lists them on each stage's row too.
    study_page = admin_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    page = study_page.content.decode()
    assert 'name="stages-1-groups"' in page and 'name="stages-1-overlap_k"' in page
    foreign = other.groups.get()
    refused = _post(admin_client, stage, groups=[foreign.pk])
    assert refused.status_code == 200
    assert (
        f"A stage takes only its own study&#x27;s groups; {foreign.pk} is not one of them."
        in refused.content.decode()
    )
    assert _stored(stage) == (["Expert"], 2, 4, [("Expert", timedelta(hours=1))])


def test_zero_k_or_m_and_a_negative_wait_are_refused_and_nothing_changes(
    admin_client, loaded_study
):
    stage = loaded_study.stages.get(position=2)
    before = _stored(stage)
    response = _post(admin_client, stage, overlap_k=0)
    assert "At least one annotator per batch and group is needed" in response.content.decode()
    response = _post(admin_client, stage, batches_per_stage=0)
    assert "Each annotator needs at least one batch in the stage" in response.content.decode()
    response = _post(
        admin_client,
        stage,
        **{
            "group_waits-TOTAL_FORMS": 1,
            "group_waits-0-group": loaded_study.groups.get(name="Expert").pk,
            "group_waits-0-min_wait": "-1 day",
        },
    )
    assert response.status_code == 200
    assert "The minimum wait cannot be negative" in response.content.decode()
    assert _stored(stage) == before


def test_a_group_with_batches_in_the_stage_cannot_be_taken_out(admin_client, loaded_study):
    stage = loaded_study.stages.get(position=1)
    lay = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    assignment_create(annotator=lay, batch=stage.batches.first())
    expert = loaded_study.groups.get(name="Expert")
    response = _post(admin_client, stage, groups=[expert.pk])
    assert response.status_code == 200
    assert (
        "Annotators of these groups already have batches in this stage, so they keep taking "
        "part: Layperson." in response.content.decode()
    )
    assert _stored(stage)[0] == []
    both = _post(admin_client, stage, groups=[expert.pk, lay.group_id])
    assert both.status_code == 302
    assert Stage.objects.get(pk=stage.pk).groups.count() == 2


def test_a_group_listed_twice_among_the_waits_is_refused(admin_client, loaded_study):
    stage = loaded_study.stages.get(position=2)
    before = _stored(stage)
    expert = loaded_study.groups.get(name="Expert")
    response = _post(
        admin_client,
        stage,
        **{
            "group_waits-TOTAL_FORMS": 2,
            "group_waits-0-group": expert.pk,
            "group_waits-0-min_wait": "1 hour",
            "group_waits-1-group": expert.pk,
            "group_waits-1-min_wait": "2 hours",
        },
    )
    assert response.status_code == 200
    assert "Please correct the duplicate data for group" in response.content.decode()
    assert _stored(stage) == before


def test_a_groups_pay_is_set_on_the_stage_page_and_bad_values_are_refused(
    admin_client, loaded_study
):
    from studies.models import StagePay

    stage = loaded_study.stages.get(position=1)
    expert = loaded_study.groups.get(name="Expert")

    def pay(**values):
        fields = {"pay-TOTAL_FORMS": 1, "pay-INITIAL_FORMS": 0, "pay-0-group": expert.pk}
        fields.update({f"pay-0-{name}": value for name, value in values.items()})
        return _post(admin_client, stage, **fields)

    for values, message in (
        ({"unit": "batch", "amount": "2.50", "currency": "gbp"}, "three-letter ISO 4217 code"),
        ({"unit": "batch", "amount": "0", "currency": "GBP"}, "Pay more than 0."),
        (
            {"unit": "hour", "amount": "12", "currency": "GBP", "minimum_hourly_rate": "-1"},
            "The least hourly rate cannot be negative.",
        ),
    ):
        refused = pay(**values)
        assert refused.status_code == 200
        assert message in refused.content.decode()
    assert not StagePay.objects.exists()
    response = pay(unit="batch", amount="2.50", currency="GBP", minimum_hourly_rate="12.21")
    assert response.status_code == 302, response.content.decode()[:2000]
    stored = StagePay.objects.get()
    assert (stored.group, stored.unit, str(stored.amount), stored.currency) == (
        expert,
        "batch",
        "2.50",
        "GBP",
    )


def test_the_database_refuses_pay_for_another_studys_group(loaded_study):
    from django.db import IntegrityError, transaction

    from studies.models import StagePay

    other = study_create(
        slug="other-pay", title="Other", stages=[("S", timedelta(0))], groups=["X"]
    )
    refused = pytest.raises(IntegrityError, match="a group's pay is for a stage of its own study")
    with refused, transaction.atomic():
        StagePay.objects.create(
            stage=loaded_study.stages.first(), group=other.groups.get(), amount=1, currency="GBP"
        )
    assert not StagePay.objects.exists()
