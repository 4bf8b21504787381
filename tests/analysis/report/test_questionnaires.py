"""The report's questionnaire blocks: a hand-worked example of the summary with an
independent cross-check, and the whole path from stored answers (and the counts
kept about screened-out people) to the report."""

import statistics
from collections import Counter

import pandas as pd

from analysis.metrics import questionnaire_summary, screened_out_summary
from analysis.report.build import REPORT_VERSION, report_build
from analysis.selectors.questionnaires import questionnaire_data
from studies.services import annotators_create
from studies.services.questionnaires import questionnaire_respond
from tests.studies.questionnaire_helpers import after_stage, consent, ids, screening

QUESTIONS = pd.DataFrame(
    [
        ("After", "Remembered?", "single", ["Yes", "No"]),
        ("After", "Which?", "multiple", ["A", "B", "C"]),
        ("After", "Hard?", "scale", []),
        ("After", "Comment", "text", []),
    ],
    columns=["questionnaire", "question", "kind", "choices"],
)

# (group, response, question, choice, scale); a text answer has neither.
RAW = [
    ("Expert", 1, "Remembered?", "Yes", None),
    ("Expert", 1, "Which?", "A", None),
    ("Expert", 1, "Which?", "B", None),
    ("Expert", 1, "Hard?", None, 2),
    ("Expert", 1, "Comment", None, None),
    ("Expert", 2, "Remembered?", "No", None),
    ("Expert", 2, "Which?", "B", None),
    ("Expert", 2, "Hard?", None, 5),
    ("Layperson", 3, "Remembered?", "Yes", None),
    ("Layperson", 3, "Hard?", None, 3),
]
ANSWERS = pd.DataFrame(
    [("After", q, g, r, c, s) for g, r, q, c, s in RAW],
    columns=["questionnaire", "question", "group", "response", "choice", "scale"],
)
TALLIES = pd.DataFrame(
    [
        ("After", "Remembered?", "answered", 3),
        ("After", "Remembered?", "No", 2),
        ("After", "Remembered?", "Yes", 1),
        ("After", "Hard?", "answered", 2),
        ("After", "Hard?", "1", 1),
        ("After", "Hard?", "4", 1),
        ("After", "Comment", "answered", 1),
        ("After", "Comment", "text", 1),
    ],
    columns=["questionnaire", "question", "answer", "count"],
)


def test_the_summary_matches_the_hand_worked_example():
    summary = questionnaire_summary(questions=QUESTIONS, answers=ANSWERS)
    assert summary == {
        "After": {
            "Remembered?": {
                "Expert": {"n": 2, "counts": {"Yes": 1, "No": 1}},
                "Layperson": {"n": 1, "counts": {"Yes": 1, "No": 0}},
            },
            # Expert 1 ticked A and B, Expert 2 B: counts add up to more than n.
            "Which?": {"Expert": {"n": 2, "counts": {"A": 1, "B": 2, "C": 0}}},
            "Hard?": {
                "Expert": {"n": 2, "mean": 3.5},  # (2 + 5) / 2
                "Layperson": {"n": 1, "mean": 3.0},
            },
            "Comment": {"Expert": {"n": 1}},
        }
    }
    assert screened_out_summary(questions=QUESTIONS, tallies=TALLIES) == {
        "After": {
            "Remembered?": {"n": 3, "counts": {"Yes": 1, "No": 2}},
            "Hard?": {"n": 2, "mean": 2.5},  # (1 + 4) / 2 from the counts
            "Comment": {"n": 1},
        }
    }


def test_the_summary_agrees_with_counting_by_hand_in_plain_python():
    summary = questionnaire_summary(questions=QUESTIONS, answers=ANSWERS)
    for group in ("Expert", "Layperson"):
        mine = [r for r in RAW if r[0] == group]
        chosen = Counter(c for _, _, q, c, _ in mine if q == "Remembered?")
        assert summary["After"]["Remembered?"][group]["counts"] == {
            "Yes": chosen["Yes"],
            "No": chosen["No"],
        }
        scales = [s for _, _, q, _, s in mine if q == "Hard?"]
        assert summary["After"]["Hard?"][group]["mean"] == statistics.mean(scales)


def test_the_report_carries_the_answers_and_the_screened_out_counts(study):
    first = screening(study)
    second = after_stage(study, 1)
    a, b = ids(first), ids(second)
    expert, layperson, out = (
        annotators_create(group=study.groups.get(name="Expert"), count=1)[0],
        *annotators_create(group=study.groups.get(name="Layperson"), count=2),
    )
    for annotator, english, scale in (
        (expert, "Yes", "5"),
        (layperson, "Yes", "2"),
        (out, "No", "1"),
    ):
        questionnaire_respond(
            annotator=annotator,
            questionnaire=first,
            answers={a["1"]: [str(a[f"1:{english}"])], a["3"]: [scale], a["4"]: ["words"]},
        )
    consent(expert, layperson)
    # A group may be named "screened_out": the screened-out counts have a block of their own.
    study.groups.filter(name="Layperson").update(name="screened_out")
    questionnaire_respond(
        annotator=expert, questionnaire=second, answers={b["1"]: [str(b["1:No"])], b["2"]: ["4"]}
    )
    report = report_build(
        frame=pd.DataFrame(),
        study_slug=study.slug,
        parameters={},
        categories=[],
        questionnaires=questionnaire_data(study_id=study.pk),
    )
    assert report["report_version"] == REPORT_VERSION >= 5
    english = report["questionnaires"]["Screening"]["Is English your first language?"]
    assert english == {
        "Expert": {"n": 1, "counts": {"Yes": 1, "No": 0}},
        "screened_out": {"n": 1, "counts": {"Yes": 1, "No": 0}},  # the group
    }
    out = report["questionnaires_screened_out"]["Screening"]
    assert out["Is English your first language?"] == {"n": 1, "counts": {"Yes": 0, "No": 1}}
    assert out["How often do you read online forums?"] == {"n": 1, "mean": 1.0}
    forums = report["questionnaires"]["Screening"]["How often do you read online forums?"]
    assert forums["screened_out"] == {"n": 1, "mean": 2.0}  # the group
    assert report["questionnaires"]["Screening"]["Anything else we should know?"]["Expert"] == {
        "n": 1
    }
    assert "words" not in str(report)  # texts are counted, never listed
    assert report["questionnaires"]["Screening"]["Which have you studied?"] == {}
    assert report["questionnaires"]["After stage 1"]["How hard was the stage?"] == {
        "Expert": {"n": 1, "mean": 4.0}
    }
    assert report["questionnaire_order"] == [
        {
            "name": "Screening",
            "placement": "screening",
            "stage": None,
            "questions": [
                "Is English your first language?",
                "Which have you studied?",
                "How often do you read online forums?",
                "Anything else we should know?",
            ],
            "choices": {
                "Is English your first language?": ["Yes", "No"],
                "Which have you studied?": ["Counselling", "Linguistics", "Neither"],
            },
            "n_screened_out": 1,
        },
        {
            "name": "After stage 1",
            "placement": "after_stage",
            "stage": "GPT-2 stage",
            "questions": ["Did you remember any response candidate?", "How hard was the stage?"],
            "choices": {"Did you remember any response candidate?": ["Yes", "No"]},
            "n_screened_out": 0,
        },
    ]


def test_a_study_without_questionnaires_has_empty_blocks(study):
    report = report_build(
        frame=pd.DataFrame(),
        study_slug=study.slug,
        parameters={},
        categories=[],
        questionnaires=questionnaire_data(study_id=study.pk),
    )
    assert (
        report["questionnaires"],
        report["questionnaires_screened_out"],
        report["questionnaire_order"],
    ) == ({}, {}, [])


def test_the_dashboard_shows_the_questionnaire_table_and_its_csv(client, study):
    from analysis.report.questionnaires import QuestionnaireData
    from tests.analysis.test_dashboard import done_run
    from tests.factories import StaffUserFactory

    order = [
        {
            "name": "After",
            "questions": list(QUESTIONS["question"]),
            "choices": {"Remembered?": ["Yes", "No"], "Which?": ["A", "B", "C"]},
            "n_screened_out": 3,
        }
    ]
    report = report_build(
        frame=pd.DataFrame(),
        study_slug=study.slug,
        parameters={},
        categories=[],
        questionnaires=QuestionnaireData(QUESTIONS, ANSWERS, TALLIES, order),
    )
    run = done_run(study, report)
    client.force_login(StaffUserFactory())
    page = client.get(f"/dashboard/{study.slug}/").content.decode()
    assert "<caption>Questionnaires</caption>" in page
    assert "Yes: 1 · No: 1" in page and "A: 1 · B: 2 · C: 0" in page
    assert "Screened out" in page and "3.50" in page and "2.50" in page
    csv_text = client.get(f"/dashboard/{study.slug}/runs/{run.pk}/questionnaires.csv").content
    lines = csv_text.decode().splitlines()
    assert lines[0].split(",")[:6] == [
        "questionnaire",
        "question",
        "group",
        "answers",
        "statistic",
        "value",
    ]
    assert "After,Remembered?,Expert,Yes: 1 · No: 1,n,2,,," in lines
    assert "After,Hard?,Screened out,,mean,2.5,,," in lines
