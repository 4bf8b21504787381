"""The refusal page's heading says the situation: "This link is not valid" only for a
link that is wrong itself; a worker early for a stage, one a screening ended and one
the practice quiz ended each read what happened, and nothing is written."""

import ast
from pathlib import Path

import pytest

from studies.errors import ErrorCode
from studies.views.entry import INVALID_LINK, REFUSAL_HEADINGS
from tests.conftest import refusal_code
from tests.studies.crowd_situations import early_for_stage_2, failed_quiz, screened_out
from tests.studies.services.test_crowd_joins import prolific, snapshot

pytestmark = pytest.mark.usefixtures("empty_cache")

STUDIES = Path(__file__).resolve().parents[3] / "studies"


def _codes_refused_in(source: str, callers: tuple[str, ...]) -> set[str]:
    """The ``ErrorCode`` members the calls of ``callers`` pass as a positional argument."""
    return {
        arg.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in callers
        for arg in node.args
        if isinstance(arg, ast.Attribute) and getattr(arg.value, "id", "") == "ErrorCode"
    }


def test_every_code_the_refusal_page_can_carry_has_a_heading():
    """The crowd joins' refusals (``CrowdRefusal``, wherever raised) and the entry
    views' own (``_refused``)."""
    codes = _codes_refused_in((STUDIES / "views" / "entry.py").read_text(), ("_refused",))
    for path in STUDIES.rglob("*.py"):
        codes |= _codes_refused_in(path.read_text(), ("CrowdRefusal",))
    assert {"STAGE_WAITING", "CROWD_SCREENED_OUT", "CROWD_QUIZ_FAILED", "LINK_UNKNOWN"} <= codes
    assert codes <= {code.name for code in REFUSAL_HEADINGS}


def test_only_links_wrong_in_themselves_are_called_not_valid():
    invalid = {code for code, heading in REFUSAL_HEADINGS.items() if heading == INVALID_LINK}
    assert invalid == {
        ErrorCode.LINK_UNKNOWN,
        ErrorCode.JOIN_WITHOUT_STAGE,
        ErrorCode.JOIN_KEY_UNKNOWN,
        ErrorCode.CROWD_IDS_MISSING,
    }


def heading(response) -> str:
    page = response.content.decode()
    start = page.index('<h1 id="refusal"')
    return page[page.index(">", start) + 1 : page.index("</h1>", start)]


def test_an_unknown_invitation_link_is_not_valid(client, crowd_study):
    response = client.get("/i/not-a-real-token/")
    assert response.status_code == 404
    assert heading(response) == INVALID_LINK
    assert refusal_code(response) == ErrorCode.LINK_UNKNOWN


@pytest.mark.parametrize(
    ("situation", "code", "title", "says", "never"),
    [
        (
            early_for_stage_2,
            ErrorCode.STAGE_WAITING,
            "Come back later: your place is kept",
            ("Stage 2 opens for you at", "your place is kept"),
            "ended",
        ),
        (
            screened_out,
            ErrorCode.CROWD_SCREENED_OUT,
            "The screening ended your participation",
            ("screening questions ended your participation",),
            "quiz",
        ),
        (
            failed_quiz,
            ErrorCode.CROWD_QUIZ_FAILED,
            "The practice quiz ended your participation",
            ("ended with its practice quiz", "pass mark"),
            "screening",
        ),
    ],
)
def test_a_returning_worker_is_told_what_stands_in_the_way(
    client, crowd_study, situation, code, title, says, never
):
    """Early for stage 2 (the place is kept), ended by the screening, ended by the
    quiz (told it was the quiz, not the screening)."""
    link = situation(crowd_study)
    before = snapshot()
    response = client.get(link)
    page = response.content.decode()
    assert response.status_code == 403
    assert refusal_code(response) == code
    assert heading(response) == title and f"<title>{title}" in page
    assert all(words in page for words in says)
    assert never not in page and INVALID_LINK not in page
    assert snapshot() == before


@pytest.mark.parametrize(
    ("situation", "code"),
    [(screened_out, ErrorCode.CROWD_SCREENED_OUT), (failed_quiz, ErrorCode.CROWD_QUIZ_FAILED)],
)
def test_a_worker_whose_participation_ended_is_told_so_at_a_later_stage_too(
    client, crowd_study, situation, code
):
    """Not "finish the stage before this one first": they cannot."""
    link = situation(crowd_study)
    pid = link.split("PROLIFIC_PID=")[1].split("&")[0]
    before = snapshot()
    response = client.get(prolific(crowd_study, 2, pid, "later-session"))
    assert response.status_code == 403
    assert refusal_code(response) == code
    assert "finished the stage before" not in response.content.decode()
    assert snapshot() == before
