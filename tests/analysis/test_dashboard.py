"""The researcher's dashboard (analysis/views.py) end to end through the test client,
its tables (analysis/tables/) and its figures (analysis/plots/) on reports built
by the real report code."""

import json
import xml.etree.ElementTree as ET
from datetime import timedelta

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from analysis.explanations import EXPLANATIONS, explain_undefined
from analysis.metrics.protocol.descriptions import PRIMARY, SECOND
from analysis.models import AnalysisRun
from analysis.parameters import analysis_parameters_clean
from analysis.plots import (
    OKABE_ITO,
    PLOTS,
    agreement_svg,
    annotator_consistency_svg,
    label_distribution_svg,
)
from analysis.report.build import Category, report_build
from analysis.report.descriptions import Codings
from analysis.tables import DASH, format_ci, format_number, format_p, report_tables
from studies.models import Assignment, Batch, Reflection, Role, Study
from studies.permissions import Capability
from studies.selectors import study_progress
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
)
from tests.factories import StaffMemberFactory, StaffUserFactory, user_with_role
from tests.studies.roles.other_study import SLUG as SLUG_B
from tests.studies.roles.other_study import leaked, make_other_study, rows_snapshot
from tests.studies.roles.test_roles import EXPECTED

HX = {"HTTP_HX_REQUEST": "true"}
SVG = "{http://www.w3.org/2000/svg}"

# Names with every character XML and HTML care about.
STAGE_1 = 'Stage <1> & "small"'
STAGE_2 = "GPT-3 stage"
LAY = "Lay<person>"
EXPERT = 'Expert & "co"'
SOURCE = "GPT<2>"
CATEGORIES = [
    Category("malformed", "Malformed", 0),
    Category("off_topic", 'Off <topic> & "odd"', 1),
]


# --------------------------------------------------------------------------- reports


def judgement_frame(*, raters: int = 3) -> pd.DataFrame:
    """A small judgements frame as ``analysis.selectors.judgements.judgements_frame`` returns it:
    two stages, two groups of ``raters`` annotators who all judge every item; per stage
    two human reflections (the same two in both stages) and four synthetic ones."""
    rows = []
    items = [(rid, "Human", "human") for rid in (1, 2)]
    rows_id = 0
    for position, stage in enumerate((STAGE_1, STAGE_2), start=1):
        stage_items = items + [
            (10 * position + i, SOURCE if i % 2 else "BART", "synthetic") for i in range(4)
        ]
        for g, group in enumerate((LAY, EXPERT)):
            for r in range(raters):
                annotator = f"{group} {r + 1}"
                for rid, source, kind in stage_items:
                    rows_id += 1
                    coherent = (rid + r + g + position) % 3 != 0
                    bit = (rid + r) % 2
                    rows.append(
                        {
                            "judgement_id": rows_id,
                            "stage": stage,
                            "stage_position": position,
                            "group": group,
                            "annotator": annotator,
                            "annotator_id": 100 * g + r,
                            "dialogue_id": f"d{rid}",
                            "reflection_id": rid,
                            "source": source,
                            "kind": kind,
                            "coherent": coherent,
                            "error_flags": 0 if coherent else 1 << bit,
                            "most_evident_bit": None if coherent else bit,
                            "empathy": 4 if coherent else None,
                            "is_recurring": position == 2 and kind == "human",
                            "assignment_status": "submitted",
                            "assignment_id": 1000 * position + 100 * g + r,
                            "seconds_spent": float(1 + (rid + r) % 6),
                            "described": not coherent and rid % 2 == 0,
                        }
                    )
    return pd.DataFrame(rows)


# Generation metadata of judgement_frame's reflections: every one was prompted the same
# way (6 items per stage: reported); the model differs (fewer than 5 items: left out).
GENERATION = pd.Series(
    {
        rid: json.dumps(
            {"prompt_type": "zero-shot", "model": "human" if rid < 10 else f"m{rid % 2}"}
            # A numeric setting with four values, for the trends.
            | ({} if rid < 10 else {"p": (0.4, 0.6, 0.8, 0.95)[rid % 4]})
        )
        for rid in (1, 2, 10, 11, 12, 13, 20, 21, 22, 23)
    }
)


def assignments_of(frame: pd.DataFrame) -> pd.DataFrame:
    """The assignments behind a judgement frame, as ``selectors.assignments_frame``
    gives them: stage 2 claimed 3 days (plus a day per rater) after stage 1's
    submission, every attention check passed."""
    batches = frame.drop_duplicates("assignment_id")[
        ["group", "annotator", "stage", "assignment_id"]
    ]
    position = frame.drop_duplicates("assignment_id")["stage_position"].to_numpy()
    rater = batches["annotator"].str.extract(r"(\d+)$")[0].astype(int).to_numpy()
    start = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(
        (position - 1) * (4 + rater - 1), unit="D"
    )
    return batches.assign(
        attention_passed=True,
        status="submitted",
        assigned_at=start,
        submitted_at=start + pd.Timedelta(days=1),
    )


CODEBOOK = [("vague", 'Vague <code> & "odd"'), ("repeats", "Repeats the client")]


def codings_of(frame: pd.DataFrame) -> Codings:
    """Both coders code every description: the primary coder gives ``vague`` on even
    judgement ids and ``repeats`` on ids not divisible by 3 (neither: uninformative);
    the second coder gives ``vague`` only on multiples of 4."""
    rows = []
    for jid in frame.loc[frame["described"], "judgement_id"]:
        for coder, vague in ((PRIMARY, jid % 2 == 0), (SECOND, jid % 4 == 0)):
            codes = ["vague"] * vague + ["repeats"] * (jid % 3 != 0)
            rows += [(jid, coder, False, code) for code in codes] or [(jid, coder, True, None)]
    return Codings(
        frame=pd.DataFrame(rows, columns=["judgement_id", "coder", "uninformative", "code"]),
        codebook=CODEBOOK,
    )


def positions_of(frame: pd.DataFrame) -> pd.DataFrame:
    """Where each annotator saw each item, as ``selectors.item_positions`` gives it:
    in the frame's order within each assignment."""
    return pd.DataFrame(
        {
            "assignment_id": frame["assignment_id"],
            "reflection_id": frame["reflection_id"],
            "position": frame.groupby("assignment_id").cumcount() + 1,
            "kind": frame["kind"],
        }
    )


def build_report(frame: pd.DataFrame, **parameters) -> dict:
    # Every reflection shares one prompt type: crossing it gives one filled combination.
    parameters = analysis_parameters_clean(
        {"bootstrap_resamples": 30, "crossed_settings": ["prompt_type"], **parameters}
    )
    return report_build(
        frame=frame,
        study_slug="pilot",
        parameters=parameters,
        categories=CATEGORIES,
        generation=GENERATION,
        assignments=assignments_of(frame),
        stages=[STAGE_1, STAGE_2],
        codings=codings_of(frame),
        positions=positions_of(frame),
    )


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(judgement_frame())


@pytest.fixture(scope="module")
def single_rater_report() -> dict:
    """One annotator per group: every agreement statistic is undefined (null)."""
    return build_report(judgement_frame(raters=1))


@pytest.fixture(scope="module")
def empty_report() -> dict:
    return build_report(judgement_frame().iloc[0:0])


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def all_text(root: ET.Element) -> str:
    return " ".join(root.itertext())


def shown_text(element: ET.Element) -> str:
    """The visible text of a <text> element (after its hover <title>, if any)."""
    tip = element.find(f"{SVG}title")
    return (tip.tail if tip is not None else element.text) or ""


# --------------------------------------------------------------------------- formatting


def test_numbers_are_formatted_with_fixed_decimals_and_nulls_as_a_dash():
    assert format_number(0.19087904498816105) == "0.191"
    assert format_number(0.5530864, 2) == "0.55"
    assert format_number(-0.0001) == "0.000"
    assert format_number(-0.133) == "-0.133"
    assert format_number(None) == DASH
    assert format_number(float("nan")) == DASH
    assert format_ci([0.10917, 0.27193]) == "[0.109, 0.272]"
    assert format_ci([None, None]) == DASH


def test_p_values_have_three_significant_digits_or_a_floor():
    assert format_p(0.36604496171972467) == "0.366"
    assert format_p(0.0012188901244624755) == "0.00122"
    assert format_p(0.5) == "0.500"
    assert format_p(0.0009) == "< 0.001"
    assert format_p(0.0) == "< 0.001"
    assert format_p(None) == DASH


def test_every_number_in_every_table_is_explained(report, single_rater_report):
    for rep in (report, single_rater_report):
        tables = report_tables(rep)
        assert [t.slug for t in tables][:9] == [
            "agreement",
            "majority",
            "error-categories",
            "category-sets",
            "agreement-over-time",
            "inter-group",
            "cross-stage",
            "human-vs-synthetic",
            "annotators",
        ]
        for table in tables:
            assert table.rows, table.slug
            for row in table.rows:
                assert len(row) == len(table.columns), table.slug
                for cell in row:
                    if cell.header:
                        continue
                    for part in cell.parts:
                        if part.text == DASH:
                            assert part.title.startswith("undefined: "), (table.slug, part)
                        elif any(ch.isdigit() for ch in part.text):
                            assert part.title, (table.slug, part)


def test_tables_follow_the_report_order_not_the_key_order(report):
    shuffled = json.loads(json.dumps(report))
    # jsonb gives keys back in its own order: reverse every mapping.
    shuffled["groups"] = dict(reversed(list(shuffled["groups"].items())))
    for group in shuffled["groups"].values():
        group["stages"] = dict(reversed(list(group["stages"].items())))
    table = report_tables(shuffled)[0]
    order = [(row[0].text, row[1].text) for row in table.rows]
    assert order == [
        (group, stage) for group in report["group_order"] for stage in report["stage_order"]
    ]


def test_undefined_statistics_show_a_dash_with_the_reason(single_rater_report):
    agreement = report_tables(single_rater_report)[0]
    column = next(i for i, c in enumerate(agreement.columns) if "fleiss_kappa" in c.stats)
    fleiss = agreement.rows[0][column].parts
    assert [p.text for p in fleiss] == [DASH]
    assert fleiss[0].title == explain_undefined("fleiss_kappa")


# --------------------------------------------------------------------------- plots


#: The figures of the coherence protocol's report (the Likert figure's tests: with the
#: Likert block, tests/analysis/report/test_likert.py; the pairwise figures': with
#: theirs, tests/analysis/report/test_comparisons.py).
COHERENCE_PLOTS = sorted(set(PLOTS) - {"likert", "pairwise-wins", "pairwise-strengths"})


@pytest.mark.parametrize("name", COHERENCE_PLOTS)
def test_plots_are_valid_svg_with_escaped_names_and_a_title(report, name):
    svg = PLOTS[name](report)
    root = parse(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    title_id, desc_id = root.get("aria-labelledby").split()
    assert root.find(f"{SVG}title").get("id") == title_id
    assert root.find(f"{SVG}desc").get("id") == desc_id
    text = all_text(root)
    assert LAY in text and EXPERT in text
    assert "<person>" not in svg  # escaped in the source, restored by the parser
    if name != "annotators":
        assert STAGE_1 in text


def test_label_distribution_stacks_shares_to_the_full_bar(report):
    root = parse(label_distribution_svg(report))
    tips = [t.text for t in root.iter(f"{SVG}title")]
    first = f"{LAY} · {STAGE_1} · Human: "
    segments = [t for t in tips if t.startswith(first)]
    assert segments and any("Coherent" in t for t in segments)
    shares = report["groups"][LAY]["stages"][STAGE_1]["label_distribution"]["human"]
    assert sum(shares.values()) == pytest.approx(1)
    assert f"{first}Coherent {100 * shares['coherent']:.1f}%" in tips
    # Legend: coherent, each category by label (escaped), incoherent without category.
    text = all_text(root)
    assert 'Off <topic> & "odd"' in text and "Incoherent, no category" in text
    fills = {el.get("fill") for el in root.iter(f"{SVG}rect")}
    assert OKABE_ITO["bluish_green"] in fills and OKABE_ITO["orange"] in fills


def test_label_distribution_by_source_has_a_bar_per_source(report):
    text = all_text(parse(label_distribution_svg(report, by="source")))
    assert SOURCE in text and "BART" in text and "Human" in text


def test_description_codes_stack_per_source_and_may_pass_100_percent(report):
    root = parse(PLOTS["description-codes"](report))
    text = all_text(root)
    assert 'Vague <code> & "odd"' in text and "Repeats the client" in text  # the legend
    shares = report["descriptions"][LAY][STAGE_1]["codes_by_source"]["Human"]
    assert sum(shares.values()) > 1  # both codes on some descriptions
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert f"{LAY} · {STAGE_1} · Human: Repeats the client {100 * shares['repeats']:.1f}%" in tips
    assert "200%" in text  # the axis reaches the longest bar
    # A source without coded descriptions is drawn as undefined, not as an empty bar.
    assert report["descriptions"][LAY][STAGE_1]["codes_by_source"][SOURCE]["vague"] is None
    assert "undefined: no coded description" in text
    fills = {el.get("fill") for el in root.iter(f"{SVG}rect")}
    assert OKABE_ITO["orange"] in fills and OKABE_ITO["sky_blue"] in fills


def test_agreement_plot_draws_points_intervals_and_landis_koch_bands(report):
    root = parse(agreement_svg(report))
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert any(t.startswith("Landis & Koch: almost perfect") for t in tips)
    assert any(t.startswith("Landis & Koch: poor") for t in tips)
    coherence = report["groups"][LAY]["stages"][STAGE_1]["coherence"]
    assert (
        f"{LAY} · {STAGE_1}: Randolph κ = {format_number(coherence['randolph_kappa'])}"
        in " ".join(tips)
    )


def test_plots_render_undefined_values_and_empty_reports(single_rater_report, empty_report):
    text = all_text(parse(agreement_svg(single_rater_report)))
    assert "Fleiss κ: undefined" in text
    for plot in PLOTS.values():
        assert "No judgements" in all_text(parse(plot(empty_report)))
    # Null-heavy hand-made report: nothing crashes, nothing is drawn as zero.
    broken = json.loads(json.dumps(single_rater_report))
    cell = broken["groups"][LAY]["stages"][STAGE_1]
    cell["label_distribution"] = {"human": dict.fromkeys(cell["label_distribution"]["human"])}
    cell["coherence"]["krippendorff_alpha_ci"] = None
    broken["groups"][LAY]["annotators"][f"{LAY} 1"]["recurring_identical_rate"] = None
    for plot in PLOTS.values():
        parse(plot(broken))


def test_annotator_plot_sorts_pseudonyms_naturally_and_marks_undefined():
    report = {
        "stage_order": ["A", "B"],
        "group_order": ["G"],
        "groups": {
            "G": {
                "stages": {},
                "annotators": {
                    name: {
                        "recurring_identical_rate": rate,
                        "n_recurring": 0 if rate is None else 2,
                        "nonrecurring_human_coherent_rate": {"A": 0.5, "B": None},
                        "n_nonrecurring": {"A": 2, "B": 0},
                    }
                    for name, rate in (("G 10", 0.5), ("G 2", None), ("G 1", 1.0))
                },
            }
        },
    }
    root = parse(annotator_consistency_svg(report))
    names = [shown_text(t) for t in root.iter(f"{SVG}text") if shown_text(t).startswith("G ")]
    assert names == ["G 1", "G 2", "G 10"]
    assert "same –" in all_text(root)


def test_control_characters_in_names_do_not_break_the_svg(report):
    odd = json.loads(json.dumps(report).replace(LAY, "Lay\\u0001person\\u0008"))
    assert "Lay\u0001person\u0008" in odd["group_order"]
    for plot in PLOTS.values():
        parse(plot(odd))


# --------------------------------------------------------------------------- the database side


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def judge_batches(study, plan: dict[str, int]) -> None:
    """One new annotator per group in ``plan`` answers and submits that many batches
    of the study's first stage (everything coherent, the attention check failed as
    intended)."""
    batches = list(Batch.objects.filter(stage__study=study, stage__position=1).order_by("pk"))
    for group_name, n_batches in plan.items():
        annotator = annotators_create(group=study.groups.get(name=group_name), count=1)[0]
        for batch in batches[:n_batches]:
            assignment = assignment_create(annotator=annotator, batch=batch)
            for reflection in Reflection.objects.filter(pk__in=assignment.order):
                answer = (
                    Answer(coherent=False, categories=frozenset({"off_topic"}))
                    if reflection.kind == Reflection.Kind.ATTENTION_CHECK
                    else Answer(coherent=True, empathy=4)
                )
                judgement_record(assignment=assignment, reflection=reflection, answer=answer)
            assignment_submit(assignment=assignment)


@pytest.fixture
def judged_study(loaded_study, settings):
    """``loaded_study`` with k = 1 and one annotator per group: the Layperson submitted
    every batch of stage 1, the Expert two of them; stage 2 has no work yet."""
    settings.ANALYSIS_AUTO_RUN = False
    Study.objects.filter(pk=loaded_study.pk).update(overlap_k=1, status=Study.Status.OPEN)
    loaded_study.refresh_from_db()
    judge_batches(loaded_study, {"Layperson": 3, "Expert": 2})
    return loaded_study


def done_run(study, result, user=None, **parameters) -> AnalysisRun:
    now = timezone.now()
    return AnalysisRun.objects.create(
        study=study,
        requested_by=user,
        parameters=analysis_parameters_clean(parameters),
        status=AnalysisRun.Status.DONE,
        progress=100,
        result=result,
        started_at=now - timedelta(seconds=12.5),
        finished_at=now,
    )


def url(name, study, *args):
    return reverse(f"analysis:{name}", args=[study.slug, *args])


def test_progress_counts_judgements_and_filled_batches_per_stage_and_group(judged_study):
    progress = study_progress(study=judged_study)
    assert progress.overlap_k == 1 and progress.group_names == ["Expert", "Layperson"]
    first, second = progress.stages
    assert (first.name, first.batches, first.batches_complete, first.slots) == (
        "GPT-2 stage",
        3,
        2,
        3,
    )
    # Three analysed items a batch (human + two synthetic; attention check not counted).
    assert [(c.name, c.submitted, c.judgements) for c in first.groups] == [
        ("Expert", 2, 6),
        ("Layperson", 3, 9),
    ]
    assert second.batches_complete == 0
    assert [c.submitted for c in second.groups] == [0, 0]


def test_rejected_work_does_not_count_as_progress(judged_study):
    Assignment.objects.filter(group__name="Expert").update(
        status=Assignment.Status.REJECTED, rejected_at=timezone.now(), rejection_reason="test"
    )
    first = study_progress(study=judged_study).stages[0]
    assert first.batches_complete == 0
    expert = first.groups[0]
    assert (expert.name, expert.submitted, expert.judgements) == ("Expert", 0, 0)


# --------------------------------------------------------------------------- access


def test_anonymous_visitors_are_sent_to_the_admin_login(client, loaded_study):
    response = client.get(url("dashboard", loaded_study))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login") + "?next=/dashboard/pilot/")
    run = done_run(loaded_study, {"x": 1})
    for target in (url("report_json", loaded_study, run.pk), url("run_status", loaded_study)):
        assert client.get(target).status_code == 302
    assert client.post(url("run_start", loaded_study)).status_code == 302
    assert AnalysisRun.objects.count() == 1


def test_expired_login_on_a_poll_redirects_the_whole_page(client, loaded_study):
    response = client.get(url("run_status", loaded_study), **HX)
    assert response.status_code == 204
    assert response["HX-Redirect"].startswith(reverse("admin:login"))


def test_users_who_are_not_staff_are_refused(client, loaded_study, django_user_model):
    client.force_login(django_user_model.objects.create_user("visitor", password="x-1234567"))
    assert client.get(url("dashboard", loaded_study)).status_code == 403
    assert client.post(url("run_start", loaded_study)).status_code == 403
    assert not AnalysisRun.objects.exists()


def test_annotator_sessions_have_no_access(client, loaded_study):
    annotator = annotators_create(group=loaded_study.groups.first(), count=1)[0]
    client.get(f"/i/{annotator.access_token}/")
    response = client.get(url("dashboard", loaded_study))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def refusal(role: str, capability: Capability) -> str:
    return (
        f"Your role in this study ({role}) does not allow this: it takes a role that may "
        f"{capability.value}."
    )


def test_viewers_see_the_dashboard_but_cannot_start_a_run(client, loaded_study):
    """Staff without a role in the study find no dashboard; a viewer sees it without
    the run form, and a run they post anyway is refused saying why (a 403 page for
    staff gives the reason) and queues nothing."""
    assert client.get(url("dashboard", loaded_study)).status_code == 302
    client.force_login(StaffMemberFactory())
    assert client.get(url("dashboard", loaded_study)).status_code == 404  # no role
    client.force_login(user_with_role(loaded_study, Role.VIEWER))
    response = client.get(url("dashboard", loaded_study))
    assert response.status_code == 200
    assert "Re-run analysis" not in response.content.decode()
    response = client.post(url("run_start", loaded_study), {"bootstrap_resamples": 1, "seed": 0})
    assert response.status_code == 403
    assert refusal("viewer", Capability.ANALYSE) in response.content.decode()
    assert not AnalysisRun.objects.exists()


def test_staff_see_the_dashboard(staff_client, loaded_study):
    response = staff_client.get(url("dashboard", loaded_study))
    assert response.status_code == 200
    assert response.templates[0].name == "analysis/dashboard.html"


def test_unknown_study_is_a_404(staff_client, db):
    assert staff_client.get("/dashboard/nope/").status_code == 404


# --------------------------------------------------------------------------- the page


def test_dashboard_without_any_run(staff_client, judged_study):
    page = staff_client.get(url("dashboard", judged_study)).content.decode()
    assert "No analysis has been run for this study yet." in page
    assert "No finished analysis yet" in page
    assert 'hx-trigger="every 2s"' not in page
    # The re-run form starts from the default parameters.
    assert 'name="bootstrap_resamples" value="1000"' in page and 'name="seed" value="0"' in page
    # Progress: filled batches, per-group batches and judgements.
    assert "2 / 3" in page and f'title="{EXPLANATIONS["batches_filled"]}"' in page
    assert '<td class="num" title="' in page and ">9</td>" in page


def test_dashboard_with_a_running_run_polls_its_status(staff_client, loaded_study):
    AnalysisRun.objects.create(
        study=loaded_study,
        parameters=analysis_parameters_clean({}),
        status=AnalysisRun.Status.RUNNING,
        progress=40,
        started_at=timezone.now(),
    )
    page = staff_client.get(url("dashboard", loaded_study)).content.decode()
    assert 'hx-trigger="every 2s"' in page
    assert f'hx-get="{url("run_status", loaded_study)}?shown=' in page
    assert "is running: 40%" in page and 'value="40"' in page


def test_dashboard_with_a_failed_run_shows_the_error(staff_client, loaded_study):
    AnalysisRun.objects.create(
        study=loaded_study,
        parameters=analysis_parameters_clean({}),
        status=AnalysisRun.Status.FAILED,
        error="ZeroDivisionError: <boom> & more",
        finished_at=timezone.now(),
    )
    page = staff_client.get(url("dashboard", loaded_study)).content.decode()
    assert "failed" in page and "ZeroDivisionError: &lt;boom&gt; &amp; more" in page
    assert 'hx-trigger="every 2s"' not in page


def test_dashboard_with_a_done_run_shows_its_tables_figures_and_parameters(
    staff_client, loaded_study, report
):
    run = done_run(loaded_study, report, excluded_sources=["BART"], seed=7)
    response = staff_client.get(url("dashboard", loaded_study))
    page = response.content.decode()
    for caption in (
        "Global agreement on coherent / incoherent",
        "Majority agreement ratios",
        "Error-category agreement",
        "Inter-group correlation and agreement",
        "Cross-stage shift on human reflections",
        "Per-annotator consistency on human reflections",
    ):
        assert f"<caption>{caption}" in page, caption
    coherence = report["groups"][LAY]["stages"][STAGE_1]["coherence"]
    expected = format_number(coherence["fleiss_kappa"])
    assert f'<span title="{EXPLANATIONS["fleiss_kappa"]}">{expected}</span>' in page.replace(
        "&#x27;", "'"
    )
    # User text is escaped in tables and in the inline figures.
    assert "Lay&lt;person&gt;" in page and "<person>" not in page
    # Run facts: id, parameters, duration.
    assert f"#{run.pk}" in page and "BART" in page and "12.5 s" in page
    assert "<dt>Seed</dt><dd>7</dd>" in page
    # (The Likert and pairwise figures follow their tables, which this study has none
    # of: tests/analysis/report/test_likert.py, test_comparisons.py.)
    for name in COHERENCE_PLOTS:
        svg_url = url("plot_svg", loaded_study, run.pk, name)
        assert f'href="{svg_url}?download=1"' in page
        assert f'data-svg-url="{svg_url}"' in page
    assert f'href="{url("report_json", loaded_study, run.pk)}"' in page
    assert 'hx-trigger="every 2s"' not in page


def test_the_rerun_form_repeats_the_parameters_of_the_report_shown(
    staff_client, loaded_study, report
):
    done_run(loaded_study, report, excluded_sources=["GPT-2"], bootstrap_resamples=40, seed=9)
    form = staff_client.get(url("dashboard", loaded_study)).context["form"]
    assert form["excluded_sources"].value() == ["GPT-2"]
    assert (form["bootstrap_resamples"].value(), form["seed"].value()) == (40, 9)
    # Every source of the study, as the item export and the API accept (Human too).
    choices = [value for value, _ in form.fields["excluded_sources"].choices]
    assert choices == ["GPT-2", "GPT-3", "Human"]


def test_the_newest_done_run_is_shown_and_older_ones_can_be_chosen(
    staff_client, loaded_study, report, empty_report
):
    old = done_run(loaded_study, report)
    new = done_run(loaded_study, empty_report)
    page = staff_client.get(url("dashboard", loaded_study)).content.decode()
    assert "No judgements counted in this run" in page
    assert f'<option value="{old.pk}">' in page and f'<option value="{new.pk}" selected>' in page
    page = staff_client.get(url("dashboard", loaded_study), {"run": old.pk}).content.decode()
    assert "Lay&lt;person&gt;" in page
    assert staff_client.get(url("dashboard", loaded_study), {"run": "x"}).status_code == 404


def test_dashboard_query_count_does_not_grow_with_the_data(
    staff_client, judged_study, report, django_assert_num_queries
):
    done_run(judged_study, report, user=StaffUserFactory())
    done_run(judged_study, report, user=StaffUserFactory())
    # session, user, study, shown run, latest runs, progress (3, 2 for the groups
    # taking part in each stage and their own waits, 1 for the study's gates, and 5 for
    # the annotators who can no longer get work, crowd entries and training quiz
    # attempts included), the study's sources, automatic evaluators, the annotators' ids
    # (the quality panel's links)
    with django_assert_num_queries(20):  # (the re-run form's generation settings: +1)
        response = staff_client.get(url("dashboard", judged_study))
    assert response.status_code == 200


# --------------------------------------------------------------------------- starting a run


def test_starting_a_run_queues_exactly_one_with_the_given_parameters(staff_client, loaded_study):
    data = {
        "excluded_sources": ["GPT-2"],
        "include_expired": "on",
        "bootstrap_resamples": "50",
        "seed": "3",
    }
    response = staff_client.post(url("run_start", loaded_study), data)
    assert response.status_code == 302 and response["Location"] == url("dashboard", loaded_study)
    run = AnalysisRun.objects.get()
    assert run.status == AnalysisRun.Status.QUEUED
    assert run.trigger == AnalysisRun.Trigger.MANUAL and run.requested_by is not None
    assert run.parameters == {
        "excluded_sources": ["GPT-2"],
        "include_expired": True,
        "bootstrap_resamples": 50,
        "seed": 3,
        "fast_seconds": 3.0,
        "agreement_floor": 0.5,
        "crossed_settings": [],
    }
    page = staff_client.get(response["Location"]).content.decode()
    assert f"Analysis #{run.pk} queued." in page
    assert 'hx-trigger="every 2s"' in page


def test_the_run_is_sent_to_the_queue_once_the_request_commits(
    staff_client, loaded_study, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(
        "analysis.services.analysis_run_dispatch", lambda run_id, **kw: sent.append(run_id)
    )
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post(url("run_start", loaded_study), {"bootstrap_resamples": 0, "seed": 0})
    assert sent == [AnalysisRun.objects.get().pk]


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"bootstrap_resamples": "-1", "seed": "0"}, "bootstrap_resamples", "Must be a whole number, 0 or more."),
        ({"bootstrap_resamples": "10", "seed": "-5"}, "seed", "Must be a whole number, 0 or more."),
        ({"bootstrap_resamples": "ten", "seed": "0"}, "bootstrap_resamples", "Enter a whole number."),
        ({"bootstrap_resamples": "10001", "seed": "0"}, "bootstrap_resamples", "Ensure this value is less than or equal to 10000."),
        ({"bootstrap_resamples": "10", "seed": "0", "excluded_sources": ["Nope"]}, "excluded_sources", "Select a valid choice. Nope is not one of the available choices."),
    ],
)  # fmt: skip
def test_bad_parameters_show_the_error_and_queue_nothing(
    staff_client, loaded_study, data, field, message
):
    response = staff_client.post(url("run_start", loaded_study), data)
    assert response.status_code == 422
    assert response.context["form"].errors[field] == [message]
    page = response.content.decode()
    assert '<details class="parameters" open>' in page
    assert not AnalysisRun.objects.exists()
    hx = staff_client.post(url("run_start", loaded_study), data, **HX)
    assert hx.status_code == 422
    assert hx.templates[0].name == "analysis/_run_panel.html"
    assert not AnalysisRun.objects.exists()


def test_starting_a_run_needs_a_post(staff_client, loaded_study):
    assert staff_client.get(url("run_start", loaded_study)).status_code == 405
    assert not AnalysisRun.objects.exists()


def test_starting_a_run_needs_the_csrf_token(loaded_study, db):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(StaffUserFactory())
    response = client.post(url("run_start", loaded_study), {"bootstrap_resamples": 1, "seed": 0})
    assert response.status_code == 403
    assert not AnalysisRun.objects.exists()


def test_htmx_start_returns_the_run_panel_polling_the_new_run(staff_client, loaded_study):
    response = staff_client.post(
        url("run_start", loaded_study), {"bootstrap_resamples": "10", "seed": "0"}, **HX
    )
    assert response.status_code == 200
    assert response.templates[0].name == "analysis/_run_panel.html"
    run = AnalysisRun.objects.get()
    page = response.content.decode()
    assert f"Analysis #{run.pk} is queued" in page
    assert 'hx-trigger="every 2s"' in page and "follow=1" in page
    assert "HX-Redirect" not in response


def test_htmx_start_of_a_run_already_computed_goes_to_its_report(
    staff_client, judged_study, monkeypatch
):
    """In eager mode the task runs in the request: the page goes to the report."""
    from analysis.services import analysis_run_execute

    monkeypatch.setattr(
        "analysis.views.analysis_run_enqueue",
        lambda **kw: analysis_run_execute(
            run_id=AnalysisRun.objects.create(
                study=kw["study"], parameters=kw["parameters"], requested_by=kw["user"]
            ).pk
        ),
    )
    response = staff_client.post(
        url("run_start", judged_study), {"bootstrap_resamples": "0", "seed": "0"}, **HX
    )
    run = AnalysisRun.objects.get()
    assert run.status == AnalysisRun.Status.DONE
    assert response["HX-Redirect"] == f"{url('dashboard', judged_study)}?run={run.pk}#report"


# --------------------------------------------------------------------------- status partial


def test_status_partial_polls_while_queued_and_stops_when_done(staff_client, loaded_study, report):
    run = AnalysisRun.objects.create(study=loaded_study, parameters=analysis_parameters_clean({}))
    response = staff_client.get(url("run_status", loaded_study), {"shown": "", "follow": "1"}, **HX)
    assert response.templates[0].name == "analysis/_run_status.html"
    assert 'hx-trigger="every 2s"' in response.content.decode()
    AnalysisRun.objects.filter(pk=run.pk).update(
        status=AnalysisRun.Status.DONE,
        result=report,
        progress=100,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    response = staff_client.get(url("run_status", loaded_study), {"shown": ""}, **HX)
    page = response.content.decode()
    assert "hx-trigger" not in page
    assert f"Analysis #{run.pk} is done" in page
    assert f'href="{url("dashboard", loaded_study)}?run={run.pk}#report">Show its report' in page
    assert "HX-Redirect" not in response
    followed = staff_client.get(url("run_status", loaded_study), {"follow": "1"}, **HX)
    assert followed["HX-Redirect"] == f"{url('dashboard', loaded_study)}?run={run.pk}#report"


def test_status_partial_stops_polling_when_the_run_failed(staff_client, loaded_study):
    AnalysisRun.objects.create(
        study=loaded_study,
        parameters=analysis_parameters_clean({}),
        status=AnalysisRun.Status.FAILED,
        error="The worker stopped.",
        finished_at=timezone.now(),
    )
    page = staff_client.get(url("run_status", loaded_study), **HX).content.decode()
    assert "hx-trigger" not in page and "The worker stopped." in page


# --------------------------------------------------------------------------- downloads


@pytest.mark.parametrize("name", COHERENCE_PLOTS)
def test_svg_endpoints_serve_valid_svg_inline_or_as_a_download(
    staff_client, loaded_study, report, name
):
    run = done_run(loaded_study, report)
    response = staff_client.get(url("plot_svg", loaded_study, run.pk, name))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml; charset=utf-8"
    assert "Content-Disposition" not in response
    root = parse(response.content)
    assert LAY in all_text(root)
    download = staff_client.get(url("plot_svg", loaded_study, run.pk, name), {"download": "1"})
    assert download["Content-Disposition"] == f'attachment; filename="pilot-{run.pk}-{name}.svg"'
    assert download.content == response.content


def test_label_distribution_svg_by_source(staff_client, loaded_study, report):
    run = done_run(loaded_study, report)
    response = staff_client.get(
        url("plot_svg", loaded_study, run.pk, "label-distribution"), {"by": "source"}
    )
    assert SOURCE in all_text(parse(response.content))


def test_unknown_plots_and_unfinished_or_foreign_runs_are_404(staff_client, loaded_study, report):
    run = done_run(loaded_study, report)
    assert staff_client.get(url("plot_svg", loaded_study, run.pk, "pie")).status_code == 404
    queued = AnalysisRun.objects.create(study=loaded_study, parameters={})
    assert (
        staff_client.get(url("plot_svg", loaded_study, queued.pk, "agreement")).status_code == 404
    )
    assert staff_client.get(url("report_json", loaded_study, queued.pk)).status_code == 404
    other = Study.objects.create(slug="other", title="Other")
    assert staff_client.get(url("report_json", other, run.pk)).status_code == 404


def test_json_download_is_the_stored_report(staff_client, loaded_study, report):
    run = done_run(loaded_study, report)
    response = staff_client.get(url("report_json", loaded_study, run.pk))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="pilot-analysis-{run.pk}.json"'
    assert json.loads(response.content) == json.loads(json.dumps(report))


# --------------------------------------------------------------------------- admin links


def test_the_study_admin_links_to_the_dashboard(staff_client, loaded_study):
    dashboard = url("dashboard", loaded_study)
    change = staff_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    assert f'<a href="{dashboard}">Dashboard</a>' in change.content.decode()
    listing = staff_client.get(reverse("admin:studies_study_changelist"))
    assert f'<a href="{dashboard}">Dashboard</a>' in listing.content.decode()


# --------------------------------------------------------------------------- tables as CSV


def test_every_report_table_downloads_as_tidy_csv(annotated_study, client):
    import csv as csv_module
    import io

    from analysis.services import analysis_run_compute

    run = analysis_run_compute(study=annotated_study, parameters={"bootstrap_resamples": 20})
    staff = get_user_model().objects.create_superuser("tables", password="pw")
    client.force_login(staff)
    page = client.get(reverse("analysis:dashboard", args=["pilot"])).content.decode()
    names = [table.slug for table in report_tables(run.result)]
    assert {"agreement", "majority", "label-distribution", "annotators"} <= set(names)
    for name in names:
        url = reverse("analysis:table_csv", args=["pilot", run.pk, name])
        assert url in page
        response = client.get(url)
        assert response.status_code == 200, name
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        assert f"pilot-analysis-{run.pk}-{name}.csv" in response["Content-Disposition"]
        rows = list(csv_module.reader(io.StringIO(response.content.decode(), newline="")))
        assert all(len(row) == len(rows[0]) for row in rows), name
    assert reverse("studies:export", args=["pilot"]) + "?format=full" in page

    response = client.get(reverse("analysis:table_csv", args=["pilot", run.pk, "agreement"]))
    rows = list(csv_module.reader(io.StringIO(response.content.decode(), newline="")))
    header, body = rows[0], rows[1:]
    assert header[:3] == ["group", "stage", "statistic"]
    row = next(r for r in body if r[:3] == ["Expert", "GPT-2 stage", "fleiss_kappa"])
    cell = run.result["groups"]["Expert"]["stages"]["GPT-2 stage"]["coherence"]
    assert float(row[header.index("value")]) == cell["fleiss_kappa"]
    assert row[header.index("band")] == cell["fleiss_band"]
    assert float(row[header.index("ci_low")]) == cell["fleiss_kappa_ci"][0]
    assert float(row[header.index("ci_high")]) == cell["fleiss_kappa_ci"][1]
    assert (
        client.get(reverse("analysis:table_csv", args=["pilot", run.pk, "nonsense"])).status_code
        == 404
    )


@pytest.fixture
def analysed_study(annotated_study):
    from analysis.services import analysis_run_compute

    run = analysis_run_compute(study=annotated_study, parameters={"bootstrap_resamples": 0})
    return annotated_study, run


@pytest.mark.parametrize("role", [role.value for role in Role])
def test_each_role_sees_what_it_may_use_on_the_dashboard(analysed_study, client, role):
    """Roles that may see the study read the dashboard's aggregates; its run and
    scores forms and the report's downloads (JSON, tables, figures) are for roles that
    may run and download analyses, its export links (rows of judgements) for roles that
    may read rows. What a role may not use is neither linked nor served."""
    study, run = analysed_study
    client.force_login(user_with_role(study, role))
    may = EXPECTED[role]
    page = client.get(reverse("analysis:dashboard", args=["pilot"]))
    if Capability.SEE not in may:
        assert page.status_code == 403
        assert refusal(role, Capability.SEE) in page.content.decode()
        return
    assert page.status_code == 200
    text = page.content.decode()
    assert ("Re-run analysis" in text) == (Capability.ANALYSE in may)
    assert ("Compute scores" in text) == (Capability.ANALYSE in may)
    downloads = [
        reverse("analysis:report_json", args=["pilot", run.pk]),
        reverse("analysis:plot_svg", args=["pilot", run.pk, "agreement"]) + "?download=1",
        *(
            reverse("analysis:table_csv", args=["pilot", run.pk, table.slug])
            for table in report_tables(run.result)
        ),
    ]
    for download in downloads:
        assert (download in text) == (Capability.ANALYSE in may), download
        response = client.get(download)
        assert response.status_code == (200 if Capability.ANALYSE in may else 403), download
    export = reverse("studies:export", args=["pilot"])
    items = reverse("analysis:items_csv", args=["pilot"])
    assert (f"{export}?format=full" in text) == (Capability.READ_ROWS in may)
    for target in (f"{export}?format=full", items):
        response = client.get(target)
        assert response.status_code == (200 if Capability.READ_ROWS in may else 403), target
    response = client.post(url("run_start", study), {"bootstrap_resamples": 0, "seed": 0})
    assert response.status_code == (302 if Capability.ANALYSE in may else 403)
    assert AnalysisRun.objects.count() == (2 if Capability.ANALYSE in may else 1)


def test_a_role_in_another_study_finds_nothing_of_this_one(analysed_study, client):
    """A role in study A only: study B's dashboard, downloads and forms are 404s (as
    for no such study), and study B's run under study A's slug is no run of A; nothing
    is queued."""
    study, _ = analysed_study
    b = make_other_study()
    client.force_login(user_with_role(study, Role.OWNER))
    before = rows_snapshot()
    for target in (
        reverse("analysis:dashboard", args=[SLUG_B]),
        reverse("analysis:run_status", args=[SLUG_B]),
        reverse("analysis:report_json", args=[SLUG_B, b.run]),
        reverse("analysis:items_csv", args=[SLUG_B]),
        reverse("analysis:report_json", args=["pilot", b.run]),
        reverse("analysis:plot_svg", args=["pilot", b.run, "agreement"]),
        reverse("analysis:table_csv", args=["pilot", b.run, "agreement"]),
        reverse("analysis:dashboard", args=["pilot"]) + f"?run={b.run}",
    ):
        response = client.get(target)
        assert response.status_code == 404, target
        assert not leaked(response.content.decode()), target
    for target in (url_b("run_start"), url_b("scores_compute")):
        assert client.post(target, {"bootstrap_resamples": 0, "seed": 0}).status_code == 404
    assert rows_snapshot() == before


def url_b(name: str) -> str:
    return reverse(f"analysis:{name}", args=[SLUG_B])


def test_the_start_page_lists_the_dashboards_a_role_may_see(client, loaded_study):
    make_other_study()
    dashboard = reverse("analysis:dashboard", args=["pilot"])
    for role in Role.values:
        client.force_login(user_with_role(loaded_study, role))
        page = client.get("/").content.decode()
        assert (dashboard in page) == (Capability.SEE in EXPECTED[role]), role
        assert not leaked(page), role


def test_the_settings_and_order_figures_show_their_tables_numbers(report):
    from analysis.plots import generation_crossed_svg, generation_mee_svg, order_positions_svg
    from analysis.tables import generation_crossed_table, generation_mee_table, order_tables

    positions = order_tables(report)[0].records()
    tips = " ".join(t.text for t in parse(order_positions_svg(report)).iter(f"{SVG}title"))
    for record in positions:
        heading = f"{record.keys['group']} · {record.keys['stage']}"
        share = record.value("coherent_rate")
        if share:
            assert f"{heading} · Position {record.keys['position']}: Coherent" in tips
    crossed = generation_crossed_table(report).records()
    assert crossed
    text = all_text(parse(generation_crossed_svg(report)))
    assert all(r.keys["settings"] in text for r in crossed)
    assert "prompt_type zero-shot" in text
    mee = generation_mee_table(report).records()
    text = all_text(parse(generation_mee_svg(report)))
    assert all(f"{r.keys['group']} · {r.keys['stage']} · {r.keys['setting']}" in text for r in mee)
