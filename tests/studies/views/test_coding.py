"""The coding page: two coders coding independently (plain POST and htmx), resuming,
blind coding, the all-coded state, filters, growing the codebook, who may code (the
roles of the study), and the codes download."""

import csv
import io
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from studies.datafiles.materials import materials_import
from studies.models import Code, Coder, DescriptionCoding, Judgement, Role, Study
from studies.permissions import Capability
from studies.selectors.coding import stage_descriptions
from studies.services import study_create
from studies.services.coding import code_create
from tests.api.conftest import staff_with_every_permission
from tests.conftest import materials_doc
from tests.studies.coding_fixtures import *  # noqa: F403  (fixtures)
from tests.studies.coding_fixtures import (
    code_first_stage,
    coded_descriptions,
    make_coder,
)
from tests.studies.roles.other_study import make_other_study
from tests.studies.roles.test_roles import EXPECTED

pytestmark = pytest.mark.django_db


@pytest.fixture
def coding_stage(shared_coding_stage):
    """Built once for the module: no test here builds another study of its slug."""
    return shared_coding_stage


HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def carol(coding_stage):
    """A collaborator: codes, and reads every coder's rows (the codes download)."""
    return make_coder("carol", coding_stage.study, Role.COLLABORATOR)


@pytest.fixture
def codebook(coding_stage):
    study = coding_stage.study
    return [
        code_create(study=study, slug="lost_context", label="Lost the context", definition="D1"),
        code_create(study=study, slug="parrots", label="Parrots the client", definition="D2"),
    ]


def page_url(stage, **query):
    url = reverse("studies:coding", args=[stage.study.slug, stage.position])
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return url


def signed_in(client, user):
    client.force_login(user)
    return client


def reveal_sources(stage):
    Study.objects.filter(pk=stage.study_id).update(coding_reveals_sources=True)
    stage.study.refresh_from_db()


def code_all(client, stage, ids, **extra):
    """Code ``ids`` in order as the signed-in coder; the last response."""
    for pk in ids:
        response = client.post(page_url(stage), {"judgement": pk, "codes": ["parrots"]}, **extra)
    return response


def test_the_page_opens_at_the_first_description_with_its_context(
    client, coding_stage, codebook, alice
):
    response = signed_in(client, alice).get(page_url(coding_stage))
    assert response.status_code == 200
    first = Judgement.objects.get(pk=coded_descriptions(coding_stage)[0])
    html = response.content.decode()
    assert first.error_description in html
    assert first.reflection.text in html
    assert f"dialogue {first.assignment.batch.context.external_id}" in html
    assert "What brings you here today" in html  # the conversation
    assert "0 / 6 coded by you" in html
    assert 'name="codes" value="lost_context"' in html
    assert "<kbd>1</kbd>" in html and "<kbd>U</kbd>" in html
    assert "Content-Security-Policy" in response.headers
    assert "<script>" not in html and "style=" not in html


def test_within_a_dialogue_the_order_is_drawn_from_the_seed(coding_stage):
    """Blind coding would be undone if a description's place gave its source away (the
    materials list the candidates in a fixed order): within a dialogue the order comes
    from the study's seed, not from the import order."""
    orders = set()
    # Two descriptions of the first dialogue: eight seeds all drawing one order happened
    # (1 in 128, as the ids vary between runs); by 40 seeds it is 1 in 2^39.
    for seed in range(1, 41):
        if len(orders) > 1:
            break
        Study.objects.filter(pk=coding_stage.study_id).update(seed=seed)
        coding_stage.study.refresh_from_db()
        selected = list(stage_descriptions(stage=coding_stage).values_list("pk", flat=True))
        assert selected == coded_descriptions(coding_stage)
        candidates = Judgement.objects.in_bulk(selected)
        first_dialogue = [
            candidates[pk].reflection_id
            for pk in selected
            if candidates[pk].assignment.batch.context_id
            == candidates[selected[0]].assignment.batch.context_id
        ]
        orders.add(tuple(dict.fromkeys(first_dialogue)))
    assert len(orders) > 1


def test_coding_is_blind_by_default(client, coding_stage, codebook, alice):
    """Coders comparing sources and groups see neither, nor the generation settings,
    nor a filter by source (which would name the source of every description)."""
    first = Judgement.objects.get(pk=coded_descriptions(coding_stage)[0])
    assert not coding_stage.study.coding_reveals_sources
    html = signed_in(client, alice).get(page_url(coding_stage)).content.decode()
    assert f'data-item="{first.pk}"' in html
    assert "Blind coding: the candidates' sources" in html
    for hidden in (
        "source:",  # the stage's name says "GPT-2", the panel no source
        first.reflection.generation["model"],
        "greedy",
        first.assignment.group.name,
        'name="source"',
    ):
        assert hidden not in html


def test_blind_coding_ignores_a_filter_by_source(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    html = signed_in(client, alice).get(page_url(coding_stage, source="Human")).content.decode()
    assert f'data-item="{ids[0]}"' in html and f"Description 1 of {len(ids)}" in html
    response = client.post(
        page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots"], "source": "Human"}
    )
    assert response.url == page_url(coding_stage, item=ids[1])


def test_a_study_may_reveal_sources_groups_and_settings(client, coding_stage, codebook, alice):
    reveal_sources(coding_stage)
    first = Judgement.objects.get(pk=coded_descriptions(coding_stage)[0])
    html = signed_in(client, alice).get(page_url(coding_stage)).content.decode()
    assert f"source: {first.reflection.source}, model: gpt-2, decoding: greedy" in html
    assert f"({first.assignment.group.name}, dialogue " in html
    assert 'name="source"' in html and "Blind coding" not in html


def test_the_admin_study_form_explains_blind_coding(admin_client, coding_stage):
    url = reverse("admin:studies_study_change", args=[coding_stage.study.pk])
    html = admin_client.get(url).content.decode()
    assert 'name="coding_reveals_sources"' in html
    assert "so coders comparing exactly those are not swayed by knowing them" in html


def test_plain_post_saves_and_goes_to_the_next_description(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    response = client.post(page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots"]})
    assert response.status_code == 302
    assert response.url == page_url(coding_stage, item=ids[1])
    coding = DescriptionCoding.objects.get()
    assert coding.coder.user == alice and coding.judgement_id == ids[0]
    assert list(coding.codes.values_list("slug", flat=True)) == ["parrots"]
    assert "1 / 6 coded by you" in client.get(response.url).content.decode()


def test_htmx_post_returns_the_next_panel(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    response = signed_in(client, alice).post(
        page_url(coding_stage), {"judgement": ids[0], "uninformative": "on"}, **HTMX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.startswith('<div id="coding-panel"')
    assert f'data-item="{ids[1]}"' in html and "Saved ✓" in html
    assert response["HX-Push-Url"] == page_url(coding_stage, item=ids[1])
    assert DescriptionCoding.objects.get().uninformative


@pytest.mark.parametrize("htmx", [False, True])
def test_a_bad_coding_is_refused_with_its_message(client, coding_stage, codebook, alice, htmx):
    ids = coded_descriptions(coding_stage)
    response = signed_in(client, alice).post(
        page_url(coding_stage),
        {"judgement": ids[0], "codes": ["parrots"], "uninformative": "on"},
        **(HTMX if htmx else {}),
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "An uninformative description gets no codes" in html
    assert 'value="parrots" data-code checked' in html  # the choice is kept
    assert not DescriptionCoding.objects.exists()


def test_unknown_codes_and_empty_codings_are_refused(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    response = client.post(page_url(coding_stage), {"judgement": ids[0], "codes": ["nope"]})
    assert response.status_code == 422
    assert "Not codes of this study: nope." in response.content.decode()
    response = client.post(page_url(coding_stage), {"judgement": ids[0]})
    assert response.status_code == 422
    assert "Choose at least one code" in response.content.decode()
    assert not DescriptionCoding.objects.exists() and not Coder.objects.exists()


def test_a_judgement_of_another_stage_is_refused(client, coding_stage, codebook, alice):
    other = coding_stage.study.stages.get(position=2)
    ids = coded_descriptions(coding_stage)
    response = signed_in(client, alice).post(
        page_url(other), {"judgement": ids[0], "uninformative": "on"}
    )
    assert response.status_code == 422
    assert "This answer belongs to another stage." in response.content.decode()
    assert not DescriptionCoding.objects.exists()


def test_two_coders_code_independently(client, coding_stage, codebook, alice, bob):
    ids = coded_descriptions(coding_stage)
    signed_in(client, alice).post(
        page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots"]}
    )
    client.logout()
    client = signed_in(client, bob)
    html = client.get(page_url(coding_stage)).content.decode()
    # Bob starts at the first description, sees none of Alice's codes, and 0 coded.
    assert f'data-item="{ids[0]}"' in html and "0 / 6 coded by you" in html
    assert "checked" not in html
    client.post(page_url(coding_stage), {"judgement": ids[0], "codes": ["lost_context"]})
    codings = {c.coder.user.username: c for c in DescriptionCoding.objects.all()}
    assert list(codings["alice"].codes.values_list("slug", flat=True)) == ["parrots"]
    assert list(codings["bob"].codes.values_list("slug", flat=True)) == ["lost_context"]
    assert Coder.objects.primary(coding_stage.study).user == alice


def test_the_page_resumes_at_the_first_uncoded_description(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    for pk in (ids[0], ids[1], ids[3]):
        client.post(page_url(coding_stage), {"judgement": pk, "codes": ["parrots"]})
    html = client.get(page_url(coding_stage)).content.decode()
    assert f'data-item="{ids[2]}"' in html and "3 / 6 coded by you" in html
    # A coded description shows this coder's own codes when revisited.
    html = client.get(page_url(coding_stage, item=ids[0])).content.decode()
    assert 'value="parrots" data-code checked' in html
    assert "Description 1 of 6" in html


def test_filters_by_source_and_by_own_code(client, coding_stage, codebook, alice, bob):
    reveal_sources(coding_stage)
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    client.post(page_url(coding_stage), {"judgement": ids[4], "codes": ["lost_context"]})
    html = client.get(page_url(coding_stage, code="lost_context")).content.decode()
    assert f'data-item="{ids[4]}"' in html and "Description 1 of 1" in html
    sources = set(Judgement.objects.filter(pk__in=ids).values_list("reflection__source", flat=True))
    source = sorted(sources)[0]
    expected = Judgement.objects.filter(pk__in=ids, reflection__source=source).count()
    html = client.get(page_url(coding_stage, source=source)).content.decode()
    assert f"of {expected}</span>" in html
    # Bob's code filter sees only his own codes: none yet.
    client.logout()
    html = signed_in(client, bob).get(page_url(coding_stage, code="lost_context")).content.decode()
    assert "No description matches these filters." in html


def test_saving_under_a_filter_keeps_the_filter(client, coding_stage, codebook, alice):
    reveal_sources(coding_stage)
    ids = coded_descriptions(coding_stage)
    source = Judgement.objects.get(pk=ids[0]).reflection.source
    response = signed_in(client, alice).post(
        page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots"], "source": source}
    )
    assert f"source={source}" in response.url


def test_saving_the_last_description_ends_in_the_all_coded_state(
    client, coding_stage, codebook, alice
):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    code_all(client, coding_stage, ids[:-1])
    response = client.post(page_url(coding_stage), {"judgement": ids[-1], "codes": ["parrots"]})
    assert response.url == page_url(coding_stage, done=1)
    html = client.get(response.url).content.decode()
    assert "data-item=" not in html and "Description 1 of" not in html
    assert f"You have coded all {len(ids)} descriptions." in html
    assert "No other coder has coded this study yet." in html
    assert "a second coder codes the same descriptions on this page" in html
    assert f'href="{page_url(coding_stage, item=ids[0])}"' in html  # read again
    # Opening the page again, or saving an earlier one again, ends there too.
    assert "You have coded all" in client.get(page_url(coding_stage)).content.decode()
    response = client.post(page_url(coding_stage), {"judgement": ids[-1], "uninformative": "on"})
    assert response.url == page_url(coding_stage, done=1)


def test_the_all_coded_state_says_what_is_left_to_the_other_coder(
    client, coding_stage, codebook, alice, bob
):
    ids = coded_descriptions(coding_stage)
    code_all(signed_in(client, bob), coding_stage, ids[:2])
    client.logout()
    client = signed_in(client, alice)
    response = code_all(client, coding_stage, ids, **HTMX)  # htmx: the panel at once
    html = response.content.decode()
    assert response["HX-Push-Url"] == page_url(coding_stage, done=1)
    assert "data-all-coded" in html and "All coded" in html
    assert f"bob has {len(ids) - 2} of this stage's descriptions left to code." in html
    # A coder may not see the dashboard: it is named, not linked.
    assert "<em>Free-text descriptions</em> section compares the primary and the second" in html
    client.logout()
    code_all(signed_in(client, bob), coding_stage, ids[2:])
    client.logout()
    html = signed_in(client, alice).get(page_url(coding_stage)).content.decode()
    assert "bob has coded every description of this stage too." in html
    assert "turns the codes into the error categories of the next phase" in html


def test_a_code_filter_opens_at_its_first_and_ends_all_coded(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    code_all(client, coding_stage, ids)
    html = client.get(page_url(coding_stage, code="parrots")).content.decode()
    assert f'data-item="{ids[0]}"' in html  # re-reading one's own codes
    response = client.post(
        page_url(coding_stage), {"judgement": ids[-1], "codes": ["parrots"], "code": "parrots"}
    )
    assert response.url == page_url(coding_stage, code="parrots", done=1)
    html = client.get(response.url).content.decode()
    assert f"You have coded all {len(ids)} descriptions that match these filters." in html


def test_moving_on_clears_the_code_form_notice(client, coding_stage, codebook, alice):
    """An htmx panel carries, out of band, an emptied notice and its description for
    the code form beside it."""
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    response = client.post(
        page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots"]}, **HTMX
    )
    html = response.content.decode()
    assert '<div id="code-add-status" role="status" hx-swap-oob="true"></div>' in html
    assert f'id="code-add-item" name="item" value="{ids[1]}" hx-swap-oob="true"' in html
    # Without htmx the whole page is new.
    html = client.get(page_url(coding_stage, item=ids[1])).content.decode()
    assert f'id="code-add-item" name="item" value="{ids[1]}">' in html


def test_the_codebook_grows_from_the_page(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    url = reverse("studies:coding_code_add", args=[coding_stage.study.slug, 1])
    data = {"slug": "too_vague", "label": "Too vague", "definition": "D", "item": ids[2]}
    response = client.post(url, data, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'hx-swap-oob="beforeend:#code-list"' in html
    assert 'value="too_vague" data-code checked' in html and "<kbd>3</kbd>" in html
    # The codebook list and the code filter beside it gain the code too.
    assert '<section id="codebook"' in html and "Too vague <code>too_vague</code>" in html
    assert '<select id="code-filter" name="code" hx-swap-oob="true">' in html
    assert '<option value="too_vague">Too vague</option>' in html
    assert "No codes yet" not in html
    response = client.post(url, data, **HTMX)
    assert response.status_code == 422
    assert "already has a code &quot;too_vague&quot;" in response.content.decode()
    response = client.post(url, {**data, "slug": "plain_one", "label": "Plain one"})
    assert response.status_code == 302 and response.url == page_url(coding_stage, item=ids[2])
    response = client.post(url, {**data, "slug": "Bad slug", "label": "Other"})
    assert response.status_code == 422
    assert "Use lower-case letters" in response.content.decode()
    assert sorted(Code.objects.values_list("slug", flat=True)) == [
        "lost_context",
        "parrots",
        "plain_one",
        "too_vague",
    ]


def refusal(role: str, capability: Capability) -> str:
    return (
        f"Your role in this study ({role}) does not allow this: it takes a role that may "
        f"{capability.value}."
    )


@pytest.mark.parametrize("role", [role.value for role in Role])
def test_who_may_code(client, coding_stage, codebook, role):
    """Roles that may code open the page, save codings and grow the codebook; the others
    are refused saying why, and nothing is written. The codes download is every coder's
    rows: for roles that may read them."""
    study = coding_stage.study
    url = page_url(coding_stage)
    add = reverse("studies:coding_code_add", args=[study.slug, 1])
    export = reverse("studies:coding_export", args=[study.slug])
    client = signed_in(client, make_coder(f"someone_{role}", study, role))
    may_code = Capability.CODE in EXPECTED[role]

    response = client.get(url)
    assert response.status_code == (200 if may_code else 403)
    if not may_code:
        assert refusal(role, Capability.CODE) in response.content.decode()
    judgement = coded_descriptions(coding_stage)[0]
    response = client.post(url, {"judgement": judgement, "uninformative": "on"})
    assert response.status_code == (302 if may_code else 403)
    assert DescriptionCoding.objects.exists() == may_code
    response = client.post(add, {"slug": "too_vague", "label": "Too vague"})
    assert response.status_code == (302 if may_code else 403)
    assert Code.objects.filter(slug="too_vague").exists() == may_code

    response = client.get(export)
    if Capability.READ_ROWS in EXPECTED[role]:
        assert response.status_code == 200
    else:
        assert response.status_code == 403
        assert refusal(role, Capability.READ_ROWS) in response.content.decode()


def test_signed_out_visitors_go_to_the_login(client, coding_stage):
    assert client.get(page_url(coding_stage)).status_code == 302


def test_a_coder_of_another_study_gets_404s_and_writes_nothing(client, coding_stage, codebook):
    """A coder of study B only, and staff holding every global permission but no role,
    find study A's coding page, its codebook form and its download as if they did not
    exist."""
    make_other_study()
    b_coder = make_coder("b_coder", Study.objects.get(slug="quokka-sentinel"))
    study = coding_stage.study
    for user in (b_coder, staff_with_every_permission()):
        client = signed_in(client, user)
        assert client.get(page_url(coding_stage)).status_code == 404
        judgement = coded_descriptions(coding_stage)[0]
        data = {"judgement": judgement, "uninformative": "on"}
        assert client.post(page_url(coding_stage), data).status_code == 404
        add = reverse("studies:coding_code_add", args=[study.slug, 1])
        assert client.post(add, {"slug": "x", "label": "X"}).status_code == 404
        export = reverse("studies:coding_export", args=[study.slug])
        assert client.get(export).status_code == 404
    assert not DescriptionCoding.objects.filter(judgement__assignment__stage=coding_stage).exists()
    assert Code.objects.filter(study=study).count() == 2


def test_a_coder_sees_the_coding_page_only(client, coding_stage, codebook, alice, carol):
    """A coder's page links to nothing else of the study (they may see nothing else);
    a collaborator's links to the dashboard, the admin and the codes download."""
    study = coding_stage.study
    dashboard = reverse("analysis:dashboard", args=[study.slug])
    admin = reverse("admin:studies_study_change", args=[study.pk])
    export = reverse("studies:coding_export", args=[study.slug])
    html = signed_in(client, alice).get(page_url(coding_stage)).content.decode()
    assert dashboard not in html and admin not in html and export not in html
    assert client.get(dashboard).status_code == 403
    html = signed_in(client, carol).get(page_url(coding_stage)).content.decode()
    assert dashboard in html and admin in html and export in html


def test_the_codes_download(client, coding_stage, codebook, alice, bob):
    ids = coded_descriptions(coding_stage)
    signed_in(client, alice).post(
        page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots", "lost_context"]}
    )
    analyst = make_coder("ann", coding_stage.study, Role.ANALYST)
    response = signed_in(client, analyst).get(
        reverse("studies:coding_export", args=[coding_stage.study.slug]) + "?stage=1"
    )
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="pilot-codes-stage-1.csv"'
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row[-2] for row in rows[1:]] == ["lost_context", "parrots"]


def test_the_admin_study_page_links_to_the_coding_page(admin_client, coding_stage):
    response = admin_client.get(reverse("admin:studies_study_change", args=[coding_stage.study.pk]))
    assert page_url(coding_stage) in response.content.decode()
    assert page_url(coding_stage.study.stages.get(position=2)) not in response.content.decode()


def test_htmx_navigation_gets_the_panel_only(client, coding_stage, codebook, alice):
    ids = coded_descriptions(coding_stage)
    response = signed_in(client, alice).get(page_url(coding_stage, item=ids[3]), **HTMX)
    html = response.content.decode()
    assert html.startswith('<div id="coding-panel"') and "<html" not in html
    assert "Description 4 of 6" in html
    assert f'href="{page_url(coding_stage, item=ids[2])}"' in html  # previous
    assert f'href="{page_url(coding_stage, item=ids[4])}"' in html  # skip


def test_an_expired_login_redirects_the_whole_page(client, coding_stage):
    response = client.post(page_url(coding_stage), {"judgement": 1}, **HTMX)
    assert response.status_code == 204
    assert response["HX-Redirect"].startswith(reverse("admin:login"))


@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize("judgement", [None, "", "abc", "999999"])
def test_a_missing_or_unknown_judgement_is_refused(
    client, coding_stage, codebook, alice, htmx, judgement
):
    data = {"codes": ["parrots"], **({"judgement": judgement} if judgement is not None else {})}
    response = signed_in(client, alice).post(page_url(coding_stage), data, **(HTMX if htmx else {}))
    assert response.status_code == 422
    html = response.content.decode()
    assert "Choose a description to code." in html
    assert "data-code checked" not in html  # the ticks were for no description shown
    assert not DescriptionCoding.objects.exists() and not Coder.objects.exists()


def test_another_studys_code_and_judgement_are_refused(client, coding_stage, codebook, alice):
    other = study_create(
        slug="other",
        title="Other study",
        stages=[("GPT-2 stage", timedelta(days=3)), ("GPT-3 stage", timedelta(days=3))],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
    )
    materials_import(study=other, content=json.dumps(materials_doc()), fmt="json")
    foreign_stage = code_first_stage(other)
    foreign_code = code_create(study=other, slug="foreign", label="Foreign", definition="D")
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    response = client.post(page_url(coding_stage), {"judgement": ids[0], "codes": ["foreign"]})
    assert response.status_code == 422
    assert "Not codes of this study: foreign." in response.content.decode()
    foreign = coded_descriptions(foreign_stage)[0]
    response = client.post(page_url(coding_stage), {"judgement": foreign, "codes": ["parrots"]})
    assert response.status_code == 422
    assert "This answer belongs to another stage." in response.content.decode()
    assert not DescriptionCoding.objects.exists() and not Coder.objects.exists()
    assert not foreign_code.codings.exists()


def test_a_refused_save_shown_on_another_description_drops_the_ticks(
    client, coding_stage, codebook, alice
):
    ids = coded_descriptions(coding_stage)
    yes = (
        Judgement.objects.filter(assignment__stage=coding_stage, error_description="")
        .values_list("pk", flat=True)
        .first()
    )
    response = signed_in(client, alice).post(
        page_url(coding_stage), {"judgement": yes, "codes": ["parrots"]}
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "This answer has no description to code." in html
    assert f'data-item="{ids[0]}"' in html and "data-code checked" not in html
    assert not DescriptionCoding.objects.exists()


def test_saving_out_of_a_code_filter_moves_to_the_next_in_that_list(
    client, coding_stage, codebook, alice
):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    for pk in ids[:3]:
        client.post(page_url(coding_stage), {"judgement": pk, "codes": ["lost_context"]})
    # Under "my code: lost_context", recoding the second as parrots takes it out of the
    # list: the page goes on to the third, not back to the first.
    response = client.post(
        page_url(coding_stage), {"judgement": ids[1], "codes": ["parrots"], "code": "lost_context"}
    )
    assert response.url == page_url(coding_stage, code="lost_context", item=ids[2])


@pytest.mark.parametrize(
    ("file", "kind", "name"),
    [
        ("csv", "text/csv; charset=utf-8", "pilot-codes-stage-1.csv"),
        ("csv-spreadsheet-safe", "text/csv; charset=utf-8", "pilot-codes-stage-1.csv"),
        (
            "xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "pilot-codes-stage-1.xlsx",
        ),
    ],
)
def test_the_codes_download_in_three_kinds_of_file(
    client, coding_stage, codebook, carol, file, kind, name
):
    ids = coded_descriptions(coding_stage)
    Judgement.objects.filter(pk=ids[0]).update(error_description="=SUM(A1) it ignores the client")
    client = signed_in(client, carol)
    client.post(page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots"]})
    export = reverse("studies:coding_export", args=[coding_stage.study.slug])
    response = client.get(f"{export}?stage=1&file={file}")
    assert response.status_code == 200 and response["Content-Type"] == kind
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    body = b"".join(response.streaming_content)
    if file == "xlsx":
        assert body.startswith(b"PK")
    else:
        row = list(csv.reader(io.StringIO(body.decode())))[1]
        escaped = file == "csv-spreadsheet-safe"
        assert row[7] == ("'" if escaped else "") + "=SUM(A1) it ignores the client"


def test_an_unknown_file_kind_is_refused(client, coding_stage, codebook, carol):
    export = reverse("studies:coding_export", args=[coding_stage.study.slug])
    response = signed_in(client, carol).get(f"{export}?file=pdf")
    assert response.status_code == 400
    assert (
        'Choose "csv", "csv-spreadsheet-safe", "xlsx", "jsonl" or "parquet", not "pdf".'
        in response.content.decode()
    )


def test_the_page_reads_in_a_constant_number_of_queries(
    client, coding_stage, codebook, alice, django_assert_num_queries
):
    ids = coded_descriptions(coding_stage)
    client = signed_in(client, alice)
    client.post(page_url(coding_stage), {"judgement": ids[0], "codes": ["parrots"]})
    url = page_url(coding_stage, item=ids[0])
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    n_queries = len(few)  # read now: the next request empties the query log
    for i in range(5):
        code_create(study=coding_stage.study, slug=f"more_{i}", label=f"More {i}")
    for pk in ids[1:4]:
        client.post(page_url(coding_stage), {"judgement": pk, "uninformative": "on"})
    with django_assert_num_queries(n_queries):
        assert client.get(url).status_code == 200
