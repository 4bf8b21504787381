"""The study protocol as data (annotation protocol).

Invariants live in the database (unique and check constraints) so the admin, the
importers and raw ORM writes all obey them. Rules that span tables (a batch's
reflections belong to its context, a judgement's reflection belongs to its
assignment's batch, an annotator's group belongs to their study) are checked by the
services and, on PostgreSQL, by triggers added in migration 0002.

Split by aggregate: ``study`` (configuration), ``stages``, ``categories`` (error categories),
``materials``, ``people`` (annotators and their sessions), ``work`` (assignments and
judgements, with the querysets that define which of them count), ``coding`` (the
codebook of free-text descriptions), ``questionnaires``, ``training`` (the quiz), ``drafts`` (an item's choices before
they are saved),
``pay`` (what each group is paid for a stage), ``privacy`` (the purge log), ``roles`` (who may do what in a study); ``messages`` gives every check constraint its message.
"""

from .categories import ErrorCategory, stage_offered_categories
from .coding import Code, Coder, DescriptionCoding
from .drafts import DRAFT_MAX_CHARS, ItemDraft
from .gates import GateDecision, StageGate
from .likert import LikertDimension, LikertRating
from .materials import (
    Batch,
    BatchItem,
    DialogueContext,
    PoolCandidate,
    Reflection,
    pool_candidate_key,
)
from .messages import CHECK_MESSAGES
from .pay import StagePay
from .people import (
    Annotator,
    AnnotatorSession,
    CrowdEntry,
    StageUnlockNotice,
    TutorialReading,
    WaitExemption,
    new_access_token,
)
from .privacy import PersonalDataPurge
from .questionnaires import (
    Choice,
    Question,
    QuestionAnswer,
    Questionnaire,
    QuestionnaireResponse,
    ScreeningTally,
)
from .roles import Role, StudyRole, StudyRoleEvent
from .stages import (
    TUTORIAL_FIELDS,
    WORDING_FIELDS,
    Stage,
    StageGroupWait,
    StageTutorial,
    StageWording,
    stage_tutorial,
    stage_wording,
)
from .study import (
    MAX_CATEGORY_BIT,
    PREFIX_REGEX,
    SLUG_REGEX,
    STUDY_SLUG_REGEX,
    AnnotatorGroup,
    ConsentVersion,
    DataLicense,
    Study,
    new_crowd_code,
    new_study_seed,
)
from .training import TrainingAnswer, TrainingAttempt, TrainingItem, TrainingQuiz
from .work import Assignment, Judgement

__all__ = [
    "CHECK_MESSAGES",
    "DRAFT_MAX_CHARS",
    "MAX_CATEGORY_BIT",
    "PREFIX_REGEX",
    "SLUG_REGEX",
    "STUDY_SLUG_REGEX",
    "TUTORIAL_FIELDS",
    "WORDING_FIELDS",
    "Annotator",
    "AnnotatorGroup",
    "AnnotatorSession",
    "Assignment",
    "Batch",
    "BatchItem",
    "Choice",
    "Code",
    "Coder",
    "ConsentVersion",
    "CrowdEntry",
    "DataLicense",
    "DescriptionCoding",
    "DialogueContext",
    "ErrorCategory",
    "GateDecision",
    "ItemDraft",
    "Judgement",
    "LikertDimension",
    "LikertRating",
    "PersonalDataPurge",
    "PoolCandidate",
    "Question",
    "QuestionAnswer",
    "Questionnaire",
    "QuestionnaireResponse",
    "Reflection",
    "Role",
    "ScreeningTally",
    "Stage",
    "StageGate",
    "StageGroupWait",
    "StagePay",
    "StageTutorial",
    "StageUnlockNotice",
    "StageWording",
    "Study",
    "StudyRole",
    "StudyRoleEvent",
    "TrainingAnswer",
    "TrainingAttempt",
    "TrainingItem",
    "TrainingQuiz",
    "TutorialReading",
    "WaitExemption",
    "new_access_token",
    "new_crowd_code",
    "new_study_seed",
    "pool_candidate_key",
    "stage_offered_categories",
    "stage_tutorial",
    "stage_wording",
]
