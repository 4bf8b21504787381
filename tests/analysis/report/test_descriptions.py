"""The report's ``descriptions`` and ``codebook`` from a two-phase study annotated
through the real services (a free-text first stage, two sources, three coders),
checked against a plain computation from the ORM rows; the free-text stage's null
category statistics; the dashboard's descriptions section."""

import copy
import csv
import io
import zlib
from collections import defaultdict

import pytest
from django.urls import reverse
from django.utils import timezone

from analysis.explanations import explain
from analysis.metrics.protocol.descriptions import PRIMARY, SECOND
from analysis.report.text import report_summary_lines
from analysis.selectors.judgements import description_codings
from analysis.services import analysis_run_compute
from analysis.tables.model import NOT_OFFERED
from studies.models import (
    Assignment,
    Batch,
    Code,
    Coder,
    DescriptionCoding,
    Judgement,
    Reflection,
    Stage,
    Study,
)
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
)
from tests.analysis.metrics.test_descriptions import kappa_by_hand
from tests.conftest import load_materials, make_study, module_transaction, scripted_answer
from tests.factories import StaffUserFactory

pytestmark = pytest.mark.django_db
FAST = {"bootstrap_resamples": 0}
FREE_TEXT_STAGE = "GPT-2 stage"
CATEGORY_STAGE = "GPT-3 stage"
CODES = ("facts", "repeats", "vague")


def stage_answer(pseudonym: str, reflection: Reflection, stage: Stage) -> Answer:
    """The conftest's scripted answers; in the free-text stage a No (attention checks
    included) comes with a description instead of categories, or, now and then,
    without one where the stage does not require it."""
    answer = scripted_answer(pseudonym, reflection)
    if answer.coherent or stage.answer_settings.asks_categories:
        return answer
    return Answer(coherent=False, description=f"It does not fit what {pseudonym} read.")


def codes_of(description: int, coder: int) -> list[str]:
    """A deterministic coding per (description, coder), by the description's number in
    a fixed order (not its primary key: the database's sequences differ between runs
    and between the test processes); [] = uninformative."""
    h = zlib.crc32(f"{description}|{coder}".encode())
    if h % 7 == 0:
        return []
    return [code for i, code in enumerate(CODES) if (h >> i) % 3 == 0] or ["vague"]


def code_study(study):
    """Three annotators per group judge every batch; stage 1 asks for descriptions.
    Three coders code every description (attention checks included): the one marked
    primary was added second; the second coder is the first added."""
    Stage.objects.filter(study=study, name=FREE_TEXT_STAGE).update(no_answer="free_text")
    for group in study.groups.order_by("name"):
        for annotator in annotators_create(group=group, count=3):
            for batch in Batch.objects.filter(stage__study=study).select_related("stage"):
                assignment = assignment_create(annotator=annotator, batch=batch)
                reflections = {r.pk: r for r in batch.reflections.all()}
                for reflection_id in assignment.order:
                    reflection = reflections[reflection_id]
                    answer = stage_answer(annotator.pseudonym, reflection, batch.stage)
                    judgement_record(assignment=assignment, reflection=reflection, answer=answer)
                assignment_submit(assignment=assignment)
    codes = {
        slug: Code.objects.create(study=study, slug=slug, label=slug.title()) for slug in CODES
    }
    coders = [Coder.objects.create(study=study, user=StaffUserFactory()) for _ in range(3)]
    Coder.objects.filter(pk=coders[1].pk).update(is_primary=True)
    described = (
        Judgement.objects.filter(assignment__stage__study=study)
        .exclude(error_description="")
        .order_by(
            "assignment__annotator__pseudonym",
            "assignment__stage__position",
            "reflection__context__external_id",
            "reflection__text",
        )
    )
    for description, judgement in enumerate(described):
        for number, coder in enumerate(coders):
            slugs = codes_of(description, number)
            coding = DescriptionCoding.objects.create(
                judgement=judgement, coder=coder, uninformative=not slugs, coded_at=timezone.now()
            )
            coding.codes.set([codes[slug] for slug in slugs])
    return study


@pytest.fixture(scope="module")
def coded_study_of_the_module(django_db_setup, django_db_blocker) -> int:
    """Built once for the module (see :func:`tests.conftest.module_transaction`): every
    test here takes this study and no other."""
    with module_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            study = code_study(load_materials(make_study()))
        yield study.pk


@pytest.fixture
def coded_study(db, coded_study_of_the_module):
    """:func:`code_study`'s study, fresh from the database."""
    return Study.objects.get(pk=coded_study_of_the_module)


def plain_descriptions(study, *, excluded=()) -> dict:
    """The descriptions block recomputed from the rows, one judgement at a time."""
    primary = Coder.objects.get(study=study, is_primary=True)
    second = Coder.objects.filter(study=study).exclude(pk=primary.pk).order_by("added_at", "pk")[0]
    coded = {}
    for coding in DescriptionCoding.objects.prefetch_related("codes"):
        coded[(coding.judgement_id, coding.coder_id)] = {c.slug for c in coding.codes.all()}
    cells = defaultdict(list)
    for j in Judgement.objects.select_related(
        "assignment__annotator__group", "assignment__stage", "reflection"
    ):
        if (
            j.assignment.status == Assignment.Status.SUBMITTED
            and j.reflection.kind != Reflection.Kind.ATTENTION_CHECK
            and j.reflection.source not in excluded
        ):
            cells[(j.assignment.annotator.group.name, j.assignment.stage.name)].append(j)
    result = defaultdict(dict)
    for (group, stage), rows in cells.items():
        described = [j for j in rows if j.error_description]
        mine = [(j, coded[(j.pk, primary.pk)]) for j in described if (j.pk, primary.pk) in coded]
        informative = [(j, codes) for j, codes in mine if codes]
        both = [j for j, _ in mine if (j.pk, second.pk) in coded]
        agreement = {}
        for code in CODES:
            first = [code in coded[(j.pk, primary.pk)] for j in both]
            other = [code in coded[(j.pk, second.pk)] for j in both]
            constant = len(set(first)) < 2 or len(set(other)) < 2
            agreement[code] = None if constant else kappa_by_hand(first, other)
        by_source = {}
        for source in {j.reflection.source for j in rows}:
            of_source = [codes for j, codes in informative if j.reflection.source == source]
            by_source[source] = {
                code: sum(code in c for c in of_source) / len(of_source) if of_source else None
                for code in CODES
            }
        n_no = sum(not j.coherent for j in rows)
        result[group][stage] = {
            "n": len(described),
            "n_incoherent": n_no,
            "coverage": len(described) / n_no if n_no else None,
            "n_coded": len(mine),
            "n_uninformative": len(mine) - len(informative),
            "codes": {
                code: sum(code in c for _, c in informative) / len(informative)
                if informative
                else None
                for code in CODES
            },
            "codes_by_source": by_source,
            "coder_agreement": agreement,
            "n_both_coded": len(both),
        }
    return result


def test_descriptions_match_a_plain_computation_from_the_rows(coded_study):
    report = analysis_run_compute(study=coded_study, parameters=FAST).result
    assert report["report_version"] >= 5
    assert report["codebook"] == [{"slug": s, "label": s.title()} for s in CODES]
    plain = plain_descriptions(coded_study)
    # Dicts nested in dicts: compare level by level so approx applies to the numbers.
    for group, stages in plain.items():
        for stage, expected in stages.items():
            got = copy.deepcopy(report["descriptions"][group][stage])
            for key in ("codes", "coder_agreement"):
                assert got.pop(key) == pytest.approx(expected.pop(key)), (group, stage, key)
            by_source = expected.pop("codes_by_source")
            assert set(got["codes_by_source"]) == set(by_source)
            for source, shares in by_source.items():
                assert got["codes_by_source"].pop(source) == pytest.approx(shares)
            got.pop("codes_by_source")
            assert got == pytest.approx(expected), (group, stage)
    free_text = report["descriptions"]["Expert"][FREE_TEXT_STAGE]
    assert free_text["n"] > 0 and free_text["n_both_coded"] == free_text["n_coded"] > 0
    assert set(free_text["codes_by_source"]) == {"Human", "GPT-2"}
    assert any(kappa is not None for kappa in free_text["coder_agreement"].values())
    assert 0 < free_text["n_uninformative"] < free_text["n_coded"]
    assert report["descriptions"]["Expert"][CATEGORY_STAGE]["n"] == 0


def test_attention_checks_and_excluded_sources_are_left_out(coded_study):
    attention = Judgement.objects.filter(
        reflection__kind=Reflection.Kind.ATTENTION_CHECK, assignment__stage__name=FREE_TEXT_STAGE
    )
    assert attention.exclude(error_description="").exists()  # described, coded, not counted
    parameters = {**FAST, "excluded_sources": ["GPT-2"]}
    report = analysis_run_compute(study=coded_study, parameters=parameters).result
    plain = plain_descriptions(coded_study, excluded=("GPT-2",))
    for group in ("Expert", "Layperson"):
        got = report["descriptions"][group][FREE_TEXT_STAGE]
        expected = plain[group][FREE_TEXT_STAGE]
        assert set(got["codes_by_source"]) == {"Human"}
        for key in ("n", "n_incoherent", "n_coded", "n_uninformative", "n_both_coded"):
            assert got[key] == expected[key], key
        assert got["codes"] == pytest.approx(expected["codes"])


def test_without_coders_the_counts_stay_and_the_codes_are_null(coded_study):
    Coder.objects.filter(study=coded_study).delete()
    report = analysis_run_compute(study=coded_study, parameters=FAST).result
    cell = report["descriptions"]["Layperson"][FREE_TEXT_STAGE]
    assert cell["n"] > 0 and cell["n_coded"] == 0 and cell["n_both_coded"] == 0
    assert cell["codes"] == dict.fromkeys(CODES)
    assert cell["coder_agreement"] == dict.fromkeys(CODES)
    assert all(shares == dict.fromkeys(CODES) for shares in cell["codes_by_source"].values())


def test_with_a_single_coder_the_agreement_is_null(coded_study):
    Coder.objects.filter(study=coded_study, is_primary=False).delete()
    report = analysis_run_compute(study=coded_study, parameters=FAST).result
    cell = report["descriptions"]["Layperson"][FREE_TEXT_STAGE]
    assert cell["n_coded"] > 0 and cell["n_both_coded"] == 0
    assert cell["coder_agreement"] == dict.fromkeys(CODES)
    assert any(share is not None for share in cell["codes"].values())


def test_the_codings_are_read_in_a_fixed_number_of_queries(coded_study, django_assert_num_queries):
    with django_assert_num_queries(4):  # codebook, primary coder, second coder, codings
        codings = description_codings(study_id=coded_study.pk)
    assert [slug for slug, _ in codings.codebook] == list(CODES)
    assert set(codings.frame["coder"]) == {PRIMARY, SECOND}  # the third coder is not read
    described = Judgement.objects.exclude(error_description="").count()
    assert codings.frame.groupby("coder")["judgement_id"].nunique().to_dict() == {
        PRIMARY: described,
        SECOND: described,
    }


def test_a_free_text_stage_keeps_its_category_statistics_with_null_values(coded_study):
    report = analysis_run_compute(study=coded_study, parameters=FAST).result
    slugs = [c["slug"] for c in report["categories"]]
    for group in report["group_order"]:
        free = report["groups"][group]["stages"][FREE_TEXT_STAGE]
        assert set(free["error_categories"]) == set(slugs)
        assert all(
            v == {"majority_agreement": None, "n_items_flagged": None}
            for v in free["error_categories"].values()
        )
        for shares in free["label_distribution"].values():
            assert all(shares[slug] is None for slug in slugs)
            assert shares["coherent"] + shares["incoherent_unspecified"] == pytest.approx(1)
        for variant in free["most_evident_error"].values():
            assert variant["fleiss_kappa"] is None and variant["n_items"] is None
            assert variant["fleiss_kappa_ci"] == [None, None]
            assert variant["categories"]  # the names stay
        for values in report["generation_settings"][group][FREE_TEXT_STAGE].values():
            for entry in values.values():
                assert all(entry["label_distribution"][slug] is None for slug in slugs)
                assert set(entry["majority_mee"].values()) == {None}
                assert entry["coherent_rate"] is not None
        # The categories stage is computed as always.
        asked = report["groups"][group]["stages"][CATEGORY_STAGE]
        assert all(
            isinstance(v["n_items_flagged"], int) for v in asked["error_categories"].values()
        )
        assert any(
            shares["malformed"] is not None for shares in asked["label_distribution"].values()
        )


def test_the_dashboard_shows_the_descriptions_section(coded_study, client):
    run = analysis_run_compute(study=coded_study, parameters=FAST)
    client.force_login(StaffUserFactory())
    page = client.get(reverse("analysis:dashboard", args=[coded_study.slug])).content.decode()
    assert "Free-text descriptions" in page
    for caption in (
        "Descriptions and their codes per group and stage",
        "Codes of the descriptions per source",
        "Coder agreement per code (Cohen&#x27;s kappa)",
    ):
        assert f"<caption>{caption}" in page, caption
    assert 'id="figure-description-codes"' in page
    # The free-text stage offered no category: its category shares say so.
    assert f'title="{explain("not_offered")}" class="undefined">{NOT_OFFERED}<' in page
    section = page[page.index("Free-text descriptions") :]
    assert "style=" not in section and "<script" not in section  # strict CSP
    # The agreement table as CSV: one kappa and one count per (group, stage, code).
    table = client.get(
        reverse("analysis:table_csv", args=[coded_study.slug, run.pk, "coder-agreement"])
    )
    rows = list(csv.DictReader(io.StringIO(table.content.decode())))
    kappas = [r for r in rows if r["statistic"] == "coder_kappa"]
    assert len(kappas) == 2 * 2 * len(CODES)
    expected = run.result["descriptions"]["Expert"][FREE_TEXT_STAGE]["coder_agreement"]["vague"]
    (vague,) = [
        r
        for r in kappas
        if (r["group"], r["stage"], r["code"]) == ("Expert", FREE_TEXT_STAGE, "vague")
    ]
    assert (float(vague["value"]) if vague["value"] else None) == pytest.approx(expected)
    text = "\n".join(report_summary_lines(run.result))
    assert "Coder agreement per code" in text and "Codes of the descriptions per source" in text
