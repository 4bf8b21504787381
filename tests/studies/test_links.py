"""Absolute links (``studies.links.absolute_url``): on an admin page, the address the
researcher reached the site at, for crowd join links and invitation links alike;
elsewhere (e-mails, ``load_demo``), the configured ``SITE_URL``."""

import re
from io import StringIO

from django.core.management import call_command
from django.urls import reverse

from studies.models import Annotator
from studies.services.crowd import stage_join_links
from tests.factories import StaffUserFactory

SERVED_AT = "127.0.0.1:8123"  # `make demo PORT=8123`


def test_join_links_and_invitation_links_on_admin_pages_name_the_same_address(
    client, study, settings
):
    staff_client = client
    staff_client.force_login(StaffUserFactory())
    settings.SITE_URL = "http://127.0.0.1:8000"  # not what the page was asked at
    study_page = staff_client.get(
        reverse("admin:studies_study_change", args=[study.pk]), HTTP_HOST=SERVED_AT
    ).content.decode()
    stage = study.stages.get(position=1)
    stage_page = staff_client.get(
        reverse("admin:studies_stage_change", args=[stage.pk]), HTTP_HOST=SERVED_AT
    ).content.decode()
    url = reverse("admin:studies_study_create_annotators", args=[study.pk])
    group = study.groups.get(name="Layperson")
    created = staff_client.post(
        url, {"group": group.pk, "count": 1}, HTTP_HOST=SERVED_AT, follow=True
    ).content.decode()

    join = f'value="http://{SERVED_AT}/s/pilot/join/{stage.join_key}'
    assert join in study_page and join in stage_page
    token = Annotator.objects.get(group=group).access_token
    assert f"http://{SERVED_AT}/i/{token}/" in created
    for page in (study_page, stage_page, created):
        assert "127.0.0.1:8000" not in page


def test_without_a_request_links_name_the_configured_site_url(study, settings):
    settings.SITE_URL = f"http://{SERVED_AT}"
    stage = study.stages.get(position=1)
    links = stage_join_links(stage=stage)
    assert set(links.values()) == {
        f"http://{SERVED_AT}/s/pilot/join/{stage.join_key}",
        f"http://{SERVED_AT}/s/pilot/join/{stage.join_key}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
    }


def test_load_demo_prints_every_link_on_the_site_url(db, settings):
    settings.SITE_URL = f"http://{SERVED_AT}"
    out = StringIO()
    call_command("load_demo", "--force", "--no-judgements", stdout=out)
    printed = out.getvalue()
    links = re.findall(r"https?://\S+", printed)
    assert len(links) > 3 and all(link.startswith(f"http://{SERVED_AT}/") for link in links)
    for annotator in Annotator.objects.all():
        assert f"http://{SERVED_AT}/i/{annotator.access_token}/" in printed
