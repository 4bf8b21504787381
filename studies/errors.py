"""Why a request or an action was refused: the ``code`` of every refusal.

The refusal exceptions (``NoWorkAvailable``, ``StageLocked``, ``CrowdRefusal``,
``TrainingRefused``, ``AssignmentClosed``, ``StaleAnswer``), the ``ValidationError``
codes of services whose refusals the API passes on, and the ``code`` of every API error
body are members of ``ErrorCode``. Pages, the API and the tests tell refusals apart by
their code; the message beside it is for the person reading it and may be reworded.
Values are stable: API clients compare them.
"""

from django.db import models


class ErrorCode(models.TextChoices):
    """Each code with its meaning (the label, shown in the API's schema)."""

    # --- API: request and validation errors (the `code` of API error bodies) ----------
    INVALID = "invalid", "Invalid input: the body's `errors` name the fields (400)."
    PARSE_ERROR = (
        "parse_error",
        "The body is not JSON the API can read: malformed, too deeply nested... (400).",
    )
    NOT_AUTHENTICATED = "not_authenticated", "No credentials sent (401)."
    AUTHENTICATION_FAILED = (
        "authentication_failed",
        "Credentials sent but not valid: an unknown token, an inactive user (401).",
    )
    PERMISSION_DENIED = (
        "permission_denied",
        "Not a researcher, or lacking a model permission (403).",
    )
    NOT_FOUND = "not_found", "No such endpoint, study, object or page (404)."
    METHOD_NOT_ALLOWED = (
        "method_not_allowed",
        "The endpoint does not answer this HTTP method (405).",
    )
    NOT_ACCEPTABLE = (
        "not_acceptable",
        "The API cannot answer in a media type the `Accept` header allows (406).",
    )
    REQUEST_TOO_LARGE = "request_too_large", "The body is larger than the server accepts (413)."
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type", "The body is not JSON (415)."

    # --- opening a study (API: 400) ---------------------------------------------------
    STUDY_NOT_READY = (
        "study_not_ready",
        "The study lacks something annotators need; the message lists what.",
    )
    STUDY_PURGED = (
        "study_purged_stays_closed",
        "A study whose personal data was purged stays closed.",
    )

    # --- claiming a batch (annotator pages) -------------------------------------------
    STUDY_NOT_OPEN = "study_not_open", "The study is not open to annotators."
    INVITATION_WITHDRAWN = (
        "invitation_withdrawn",
        "The annotator's invitation was withdrawn (deactivated).",
    )
    STAGES_COMPLETED = "stages_completed", "The annotator has finished every stage."
    STAGE_LOCKED = "stage_locked", "An earlier stage is not finished yet."
    STAGE_WAITING = "stage_waiting", "The pause after the previous stage has not elapsed yet."
    STAGE_AWAITING_ITEMS = (
        "stage_awaiting_items",
        "A gated stage's items are still being decided: more batches may come.",
    )
    STAGE_NOT_FOR_GROUP = (
        "stage_not_for_group",
        "The annotator's group does not take part in this stage.",
    )
    STAGE_SCHEME_NOT_FINAL = (
        "stage_scheme_not_final",
        "The stage's error categories come from coding and are not marked final yet.",
    )
    STAGE_ON_PLATFORM = (
        "stage_on_platform",
        "A crowd worker starts this stage from its own task on their platform.",
    )
    STAGE_FULL = (
        "stage_full",
        "Every batch of the stage has enough annotators of the group for now.",
    )
    STAGE_TUTORIAL_UNREAD = (
        "stage_tutorial_unread",
        "The stage has a tutorial of its own the annotator has not confirmed yet.",
    )
    CLAIMS_BUSY = (
        "claims_busy",
        "Concurrent claims kept taking the free slots first; trying again later helps.",
    )

    # --- saving an answer (annotator pages) -------------------------------------------
    ASSIGNMENT_CLOSED = (
        "assignment_closed",
        "The batch takes no more answers (submitted, expired, rejected, past deadline).",
    )
    STALE_ANSWER = "stale_answer", "The answer was changed since the page showed it."

    # --- the training quiz (annotator pages) ------------------------------------------
    NO_QUIZ = "no_quiz", "The study has no practice quiz."
    QUIZ_PASSED = "quiz_passed", "The annotator passed the quiz already."
    QUIZ_OVER = "quiz_over", "Every attempt was used and none passed."
    QUIZ_NOT_STARTED = "quiz_not_started", "No attempt is in progress."
    QUIZ_IN_PROGRESS = "quiz_in_progress", "An attempt is in progress already."
    NO_SUCH_PRACTICE_ITEM = "no_such_practice_item", "No practice item has this number."
    PRACTICE_ITEM_ANSWERED = (
        "practice_item_answered",
        "The practice item was answered already in this attempt.",
    )
    PRACTICE_ITEM_NOT_NEXT = (
        "practice_item_not_next",
        "An earlier practice item is still unanswered.",
    )

    # --- links (annotator pages) --------------------------------------------------------
    LINK_UNKNOWN = "link_unknown", "No active invitation has this link."
    JOIN_WITHOUT_STAGE = (
        "join_without_stage",
        "A study-wide join link of an earlier version, which names no stage.",
    )
    JOIN_KEY_UNKNOWN = "join_key_unknown", "The join link names no stage of the study."
    JOIN_RATE_LIMITED = (
        "join_rate_limited",
        "Too many people joined from one network in the last few minutes.",
    )

    # --- crowd workers joining through a link (annotator pages) -----------------------
    CROWD_IDS_MISSING = (
        "crowd_ids_missing",
        "The link lacks the platform's ids, or one is malformed.",
    )
    CROWD_CLOSED = "crowd_closed", "The study is not taking part through a crowd platform now."
    CROWD_WRONG_TASK = (
        "crowd_wrong_task",
        "The link came from a platform task that is not this stage's.",
    )
    CROWD_NOT_A_PARTICIPANT = (
        "crowd_not_a_participant",
        "A later stage's link, from someone who did not take part earlier.",
    )
    CROWD_FULL = "crowd_full", "The study has all the crowd workers it needs."
    PARTICIPATION_ENDED = (
        "participation_ended",
        "The research team ended the worker's participation.",
    )
    CROWD_SCREENED_OUT = (
        "crowd_screened_out",
        "The screening questions ended the worker's participation.",
    )
    CROWD_QUIZ_FAILED = (
        "crowd_quiz_failed",
        "The practice quiz (every attempt failed) ended the worker's participation.",
    )
    CROWD_PART_FINISHED = "crowd_part_finished", "The worker's part of this stage is finished."
    CROWD_STARTED_ELSEWHERE = (
        "crowd_started_elsewhere",
        "The worker started this stage in another browser or platform session.",
    )
    CROWD_NO_WORK_LEFT = (
        "crowd_no_work_left",
        "Other people did every batch of the stage that could be the worker's.",
    )

    # --- computing automatic scores (analysis) ----------------------------------------
    SCORES_METRIC_UNKNOWN = (
        "scores_metric_unknown",
        "No metric, or one that is not computed here, was asked for.",
    )
    SCORES_NO_REFERENCE = (
        "scores_no_reference",
        "The study has no human reflection to score the others against.",
    )
    SCORES_IMPORTED_UNDER_METRIC_NAME = (
        "scores_imported_under_metric_name",
        "Scores imported under the metric's name are in the way (replace them to go on).",
    )
    SCORES_QUEUE_DOWN = "scores_queue_down", "The task queue could not take the computation."


#: The codes an API error body can carry, as the OpenAPI schema documents them.
API_ERROR_CODES = (
    ErrorCode.INVALID,
    ErrorCode.PARSE_ERROR,
    ErrorCode.NOT_AUTHENTICATED,
    ErrorCode.AUTHENTICATION_FAILED,
    ErrorCode.PERMISSION_DENIED,
    ErrorCode.NOT_FOUND,
    ErrorCode.METHOD_NOT_ALLOWED,
    ErrorCode.NOT_ACCEPTABLE,
    ErrorCode.REQUEST_TOO_LARGE,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    ErrorCode.STUDY_NOT_READY,
    ErrorCode.STUDY_PURGED,
)
