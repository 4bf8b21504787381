"""Durations as people write them, in the admin's study and stage forms."""

import re
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from studies.durations import HumanDurationField, duration_format, duration_parse
from studies.models import Stage
from tests.conftest import form_data
from tests.factories import StaffUserFactory


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3 days", timedelta(days=3)),
        ("2 days 4 hours", timedelta(days=2, hours=4)),
        ("2 days, 4 hours and 30 minutes", timedelta(days=2, hours=4, minutes=30)),
        ("90 minutes", timedelta(minutes=90)),
        ("1h 30m", timedelta(minutes=90)),
        ("1.5 hours", timedelta(minutes=90)),
        ("1 week", timedelta(days=7)),
        ("0", timedelta(0)),
        ("  3 Days ", timedelta(days=3)),
        # Django's own formats still read, as older pages and str(timedelta) write them.
        ("3 00:00:00", timedelta(days=3)),
        ("00:30:00", timedelta(minutes=30)),
        ("3 days, 0:00:00", timedelta(days=3)),
    ],
)
def test_durations_read_as_people_write_them(text, expected):
    assert duration_parse(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("90", 'has no unit: write e.g. "90 minutes"'),
        ("3 fortnights", '"fortnights" is not a unit of time'),
        ("3 days 2 days", "names the days twice"),
        ("soon", "is not a duration"),
        ("3 days please", "is not a duration"),
        ("99999999999 weeks", "is too long: the longest duration is 999999999 days"),
        ("9999999999 00:00:00", "is too long"),
    ],
)
def test_a_duration_that_cannot_be_read_says_why(text, message):
    with pytest.raises(ValueError, match=message):
        duration_parse(text)


def test_a_too_long_duration_is_a_form_error_not_a_crash():
    with pytest.raises(ValidationError, match="is too long"):
        HumanDurationField().clean("99999999999 weeks")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (timedelta(days=3), "3 days"),
        (timedelta(days=2, hours=4), "2 days 4 hours"),
        (timedelta(minutes=90), "1 hour 30 minutes"),
        (timedelta(minutes=30), "30 minutes"),
        (timedelta(days=1, seconds=1), "1 day 1 second"),
        (timedelta(0), "0"),
    ],
)
def test_durations_are_shown_as_people_write_them_and_read_back(value, shown):
    assert duration_format(value) == shown
    assert duration_parse(shown) == value


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def test_the_study_page_shows_and_accepts_durations_in_words(staff_client, study):
    url = reverse("admin:studies_study_change", args=[study.pk])
    response = staff_client.get(url)
    page = response.content.decode()
    assert 'value="30 minutes"' in page  # the time allowed per batch
    for i in (0, 1):  # each stage's minimum wait
        assert re.search(rf'name="stages-{i}-min_wait" value="3 days"', page)
    assert 'placeholder="e.g. 3 days"' in page
    data = form_data(response)
    data["batch_time_limit"] = "45 minutes"
    data["stages-1-min_wait"] = "2 days 4 hours"
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    study.refresh_from_db()
    assert study.batch_time_limit == timedelta(minutes=45)
    assert study.stages.get(position=2).min_wait == timedelta(days=2, hours=4)


def test_a_wait_in_words_that_cannot_be_read_is_refused_and_changes_nothing(staff_client, study):
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = form_data(staff_client.get(url))
    data["stages-0-min_wait"] = "3 fortnights"
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "&quot;fortnights&quot; is not a unit of time" in response.content.decode()
    assert list(Stage.objects.filter(study=study).values_list("min_wait", flat=True)) == [
        timedelta(days=3),
        timedelta(days=3),
    ]


def test_the_stage_list_shows_the_wait_in_words(staff_client, study):
    response = staff_client.get(reverse("admin:studies_stage_changelist"))
    assert '<td class="field-min_wait_display">3 days</td>' in response.content.decode()


def test_the_study_page_shows_each_stages_join_links_ready_to_paste(staff_client, study):
    response = staff_client.get(reverse("admin:studies_study_change", args=[study.pk]))
    page = response.content.decode()
    for stage in study.stages.all():
        link = f"http://testserver/s/pilot/join/{stage.join_key}"
        prolific = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}"
        assert f'value="{link}{prolific}"' in page
        assert f'value="{link}"' in page
        assert stage.completion_code in page
    assert "/s//join" not in page
