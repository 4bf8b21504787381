"""Every service path locks rows in ``studies.locks``'s order (the aggregates each path
locked, recorded by ``locks_recorded``), and no code outside that module takes a row
lock of its own."""

import ast
import json
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import studies.locks
from analysis.services import analysis_run_create, analysis_run_execute
from studies.datafiles.materials import materials_import
from studies.locks import Aggregate, annotators_locked, locks_recorded
from studies.models import Annotator, Batch, CrowdEntry, Study
from studies.selectors.stages import annotator_stage_states
from studies.services import (
    Answer,
    annotators_create,
    assignment_claim,
    assignment_create,
    assignment_reject,
    assignment_submit,
    judgement_record_item,
    study_open,
    study_purge_personal_data,
)
from studies.services.crowd import crowd_stage_end_early
from studies.services.questionnaires import questionnaire_respond
from studies.services.training import training_answer_record, training_attempt_start
from tests.conftest import materials_doc
from tests.studies.hot_path.test_hot_path import annotator, open_study  # noqa: F401 (fixtures)
from tests.studies.questionnaire_helpers import ids, screening
from tests.studies.services.test_crowd_joins import prolific
from tests.studies.services.test_crowd_partial import (  # noqa: F401 (a fixture)
    busy_study,
    others_hold_the_rest,
    worker_with_one_batch,
)
from tests.studies.services.test_opening import TUTORIAL
from tests.studies.training_fixtures import annotator_ready_for_quiz, quiz_add

pytestmark = pytest.mark.usefixtures("empty_cache")

A = Aggregate
ROOT = Path(__file__).resolve().parents[2]
LOCK_CLAUSE = re.compile(r"\bFOR (UPDATE|SHARE|NO KEY UPDATE|KEY SHARE)\b")


def assert_in_order(taken: list[Aggregate], expected: list[Aggregate]) -> None:
    """The path locked ``expected``, and each aggregate it locked first after the ones
    before it (taking one it holds already again waits for nothing)."""
    assert taken == expected
    firsts = list(dict.fromkeys(taken))
    assert firsts == sorted(firsts), f"out of order: {[a.name for a in taken]}"


def test_the_order_is_the_one_the_module_states():
    doc = studies.locks.__doc__
    places = [doc.index(f"``{aggregate.name}``") for aggregate in Aggregate]
    assert places == sorted(places)


def _takes_a_lock(source: str) -> bool:
    """``select_for_update`` called, or a locking clause in a string that is not a
    docstring (SQL, not prose)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "select_for_update":
            return True
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and LOCK_CLAUSE.search(node.value)
        ):
            return True
    return False


def test_no_code_takes_a_row_lock_outside_the_lock_module():
    """Migrations aside; the hot path's statement names its lock in its SQL (and its
    place in the order: ``answer_save``)."""
    allowed = {Path("studies/locks.py"), Path("studies/hot_path/saves.py")}
    found = [
        str(path.relative_to(ROOT))
        for package in ("studies", "analysis", "annotation_site")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
        and path.relative_to(ROOT) not in allowed
        and _takes_a_lock(path.read_text())
    ]
    assert found == []
    assert _takes_a_lock((ROOT / "studies/hot_path/saves.py").read_text())  # the check sees


def test_a_helper_locks_its_own_rows_only_whatever_it_joins(annotator):
    with CaptureQueriesContext(connection) as queries:
        annotators_locked().select_related("study", "group").get(pk=annotator.pk)
    (sql,) = [q["sql"] for q in queries.captured_queries]
    assert sql.endswith('FOR UPDATE OF "studies_annotator"')


# --- the paths -----------------------------------------------------------------------------


def test_numbering_new_annotators_locks_the_study_then_the_group(study):
    with locks_recorded() as taken:
        annotators_create(group=study.groups.get(name="Layperson"), count=2)
    assert_in_order(taken, [A.STUDY, A.GROUP])


def test_a_newcomers_crowd_join_locks_the_study_then_the_crowd_group(client, crowd_study):
    """A known worker's join locks only the group: it creates no annotator, and waits
    for no study-wide work (an import, a computation of scores)."""
    with locks_recorded() as newcomer:
        client.get(prolific(crowd_study, 1, "pid1"))
    with locks_recorded() as returning:
        client.get(prolific(crowd_study, 1, "pid1"))
    assert Annotator.objects.filter(platform_participant_id="pid1").exists()
    # A newcomer's annotators_create takes both again, held already.
    assert_in_order(newcomer, [A.STUDY, A.GROUP, A.STUDY, A.GROUP])
    assert_in_order(returning, [A.GROUP])


def test_claim_save_submit_and_reject_lock_the_annotator_then_the_work(annotator):
    with locks_recorded() as claim:
        assignment = assignment_claim(annotator=annotator)
    assert_in_order(claim, [A.ANNOTATOR, A.BATCH])
    for number in range(1, len(assignment.order) + 1):
        with locks_recorded() as save:
            judgement_record_item(
                annotator_id=annotator.pk,
                assignment_id=assignment.pk,
                number=number,
                answer=Answer(coherent=True, empathy=3),
                categories={},
            )
        assert_in_order(save, [A.ASSIGNMENT])
    with locks_recorded() as submit:
        assignment_submit(assignment=assignment)
    with locks_recorded() as reject:
        assignment_reject(assignment=assignment, reason="Answered at random.")
    assert_in_order(submit, [A.ASSIGNMENT])
    assert_in_order(reject, [A.ASSIGNMENT])


def test_a_batch_given_by_hand_locks_its_study_stage_then_batch(annotator):
    batch = Batch.objects.filter(stage__study=annotator.study).first()
    with locks_recorded() as taken:
        assignment_create(annotator=annotator, batch=batch)
    assert_in_order(taken, [A.STUDY, A.STAGE, A.BATCH])


def test_the_quiz_locks_the_study_then_the_annotator(loaded_study):
    quiz_add(loaded_study)
    annotator = annotator_ready_for_quiz(loaded_study)
    with locks_recorded() as start:
        training_attempt_start(annotator=annotator)
    with locks_recorded() as answer:
        training_answer_record(
            annotator=annotator, number=1, answer=Answer(coherent=True, empathy=4)
        )
    assert_in_order(start, [A.STUDY, A.ANNOTATOR])
    assert_in_order(answer, [A.STUDY, A.ANNOTATOR])


def test_a_screening_that_ends_participation_locks_the_person_before_their_entry(
    client, crowd_study
):
    """Ending a stage early holds the annotator and then the entry: a screening must not
    hold the entry while it waits for the annotator."""
    client.get(prolific(crowd_study, 1, "pid1"))
    worker = Annotator.objects.get(platform_participant_id="pid1")
    q = screening(crowd_study)
    m = ids(q)
    with locks_recorded() as taken:
        questionnaire_respond(
            annotator=worker, questionnaire=q, answers={m["1"]: [str(m["1:No"])], m["3"]: ["2"]}
        )
    assert CrowdEntry.objects.get(annotator=worker).outcome == CrowdEntry.Outcome.SCREENED_OUT
    assert_in_order(taken, [A.QUESTIONNAIRE, A.ANNOTATOR, A.CROWD_ENTRY])


def test_an_answer_that_screens_nobody_out_locks_the_questionnaire_only(annotator):
    q = screening(annotator.study)
    m = ids(q)
    with locks_recorded() as taken:
        questionnaire_respond(
            annotator=annotator,
            questionnaire=q,
            answers={m["1"]: [str(m["1:Yes"])], m["3"]: ["2"]},
        )
    assert_in_order(taken, [A.QUESTIONNAIRE])


def test_ending_a_crowd_workers_stage_early_locks_the_annotator_then_the_entry(
    client,
    busy_study,
):
    worker = worker_with_one_batch(client, busy_study)
    others_hold_the_rest(busy_study)
    now = timezone.now()
    states = annotator_stage_states(annotator=worker, now=now)
    with locks_recorded() as taken:
        assert crowd_stage_end_early(annotator=worker, states=states, now=now)
    assert_in_order(taken, [A.ANNOTATOR, A.CROWD_ENTRY])


def test_opening_importing_and_purging_lock_the_study_first(study):
    with locks_recorded() as imported:
        materials_import(study=study, content=json.dumps(materials_doc()), fmt="json")
    Study.objects.filter(pk=study.pk).update(**TUTORIAL)
    with locks_recorded() as opened:
        study_open(study=study)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    with locks_recorded() as purged:
        study_purge_personal_data(study=study)
    assert_in_order(imported, [A.STUDY])
    assert_in_order(opened, [A.STUDY])
    assert_in_order(purged, [A.STUDY, A.SESSION])


def test_a_worker_claiming_an_analysis_run_locks_the_study_then_the_run(loaded_study):
    run = analysis_run_create(study=loaded_study)
    with locks_recorded() as taken:
        analysis_run_execute(run_id=run.pk)
    assert_in_order(taken, [A.STUDY, A.ANALYSIS_RUN])
