"""No admin response to a user with a role in study A only holds anything of study B
(its title and slug, a reflection text, an annotator's e-mail address and platform id):
the lists (searched, filtered for B), B's rows' pages by id, the autocomplete, and every
extra page of the admins (the study page's imports, exports and forms) for B."""

import pytest
from django.contrib import admin
from django.urls import reverse

from studies.models import Role
from tests.factories import StaffUserFactory, user_with_role
from tests.studies.admin.roles_fixtures import (  # noqa: F401  (fixtures)
    B_REFLECTION,
    SENTINELS,
    per_study_admins,
    rows_of,
    two_studies,
    two_studies_of_the_module,
)

# The autocomplete pages models without an ordering; beside the point here.
pytestmark = pytest.mark.filterwarnings("ignore::django.core.paginator.UnorderedObjectListWarning")

STANDARD_PAGES = ("changelist", "add", "history", "delete", "change")


def _extra_url(pattern, name: str, study, rows) -> str:
    """An admin's own page (``pattern``) asked for study B's rows: each argument by its
    name."""
    values = {"study_id": study.pk, "object_id": rows.first().pk, "position": 2}
    values["selection_id"] = rows.first().pk  # a candidate selection's own pages
    values["platform"] = "prolific"
    kwargs = {}
    for argument in pattern.pattern.converters:
        assert argument in values, f"{name}: no value for {argument}; add one to the test"
        kwargs[argument] = values[argument]
    return reverse(f"admin:{name}", kwargs=kwargs)


def urls_of_study_b(study) -> list[str]:
    urls = ["/admin/", "/admin/studies/", "/admin/analysis/"]
    for model, model_admin in per_study_admins().items():
        meta = model._meta
        prefix = f"{meta.app_label}_{meta.model_name}"
        theirs = rows_of(model, study)
        listed = reverse(f"admin:{prefix}_changelist")
        path = model_admin.study_path
        urls += [
            listed,
            # Parts of the sentinels (a page repeats the words searched for).
            *(f"{listed}?q={word}" for word in ("Sentinel", "sentinel-b", "PID-B")),
            f"{listed}?{path}__exact={study.pk}",
            f"{listed}?{path}={study.pk}&_popup=1",
        ]
        for name in ("study", "stage", "assignment__stage__study", "coder__study"):
            urls.append(f"{listed}?{name}__id__exact={study.pk}")
        if model_admin.add_capability is not None:  # the add page, for B
            urls.append(reverse(f"admin:{prefix}_add") + f"?study={study.pk}")
        for row in theirs[:1]:
            for page in ("change", "history", "delete"):
                urls.append(reverse(f"admin:{prefix}_{page}", args=[row.pk]))
        for pattern in model_admin.get_urls():
            name = pattern.name or ""
            if name and not name.endswith(STANDARD_PAGES):
                urls.append(_extra_url(pattern, name, study, theirs))
        for field in [*meta.concrete_fields, *meta.many_to_many]:
            if field.is_relation and admin.site.is_registered(field.related_model):
                for term in ("", "Sentinel"):
                    urls.append(
                        f"/admin/autocomplete/?app_label={meta.app_label}"
                        f"&model_name={meta.model_name}&field_name={field.name}&term={term}"
                    )
    return urls


def body(response) -> str:
    content = (
        b"".join(response.streaming_content) if response.streaming else response.content
    ).decode(errors="replace")
    return " ".join([content, response.get("Location", ""), str(response.cookies)]).lower()


def leaks(client, urls) -> list[tuple[str, str]]:
    found = []
    for url in urls:
        text = body(client.get(url))
        found += [(url, sentinel) for sentinel in SENTINELS if sentinel.lower() in text]
    return found


def test_the_crawl_reaches_every_sentinel_for_a_superuser(client, two_studies):
    """The test's own check: a superuser is shown each of B's sentinels somewhere."""
    client.force_login(StaffUserFactory())
    found = {sentinel for _, sentinel in leaks(client, urls_of_study_b(two_studies.b))}
    assert found == set(SENTINELS)


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_no_admin_response_holds_study_b_to_a_role_in_study_a(client, two_studies, role):
    client.force_login(user_with_role(two_studies.a, role))
    assert leaks(client, urls_of_study_b(two_studies.b)) == []


def test_no_post_to_study_bs_pages_does_anything(client, two_studies):
    """Creating annotators, importing, deleting B's rows: a 404 or a refusal, and B
    keeps everything (a B reflection, say)."""
    from studies.models import Annotator, Reflection

    b = two_studies.b
    client.force_login(user_with_role(two_studies.a, Role.OWNER))
    annotators = Annotator.objects.filter(study=b).count()
    group = b.groups.first()
    response = client.post(
        reverse("admin:studies_study_create_annotators", args=[b.pk]),
        {"group": group.pk, "count": 3},
    )
    assert response.status_code == 404
    assert Annotator.objects.filter(study=b).count() == annotators
    reflection = Reflection.objects.get(text=B_REFLECTION)
    response = client.post(
        reverse("admin:studies_reflection_delete", args=[reflection.pk]), {"post": "yes"}
    )
    assert response.status_code == 302 and B_REFLECTION not in body(response)
    assert Reflection.objects.filter(pk=reflection.pk).exists()
    response = client.post(
        reverse("admin:studies_study_changelist"),
        {"action": "delete_selected", "_selected_action": [b.pk], "post": "yes"},
    )
    assert b.title.lower() not in body(response)
    assert type(b).objects.filter(pk=b.pk).exists()
