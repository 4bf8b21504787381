"""Writing a parsed published file as a new, closed study (see the package docstring)."""

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ...models import (
    STUDY_SLUG_REGEX,
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    BatchItem,
    DialogueContext,
    Judgement,
    LikertDimension,
    LikertRating,
    Reflection,
    Stage,
    Study,
)
from ...protocol import (
    HUMAN_SOURCE,
    NO_ANSWER_BOTH,
    NO_ANSWER_FREE_TEXT,
    AnswerSettings,
    likert_scale_range,
    shuffled_order,
)
from ...services import (
    Answer,
    EncodedAnswer,
    answer_encode,
    study_category_bits,
    study_create,
)
from ...signals import materials_written
from .. import DataFileError, Problem, Problems
from .parsed import Parsed, Row
from .parsing import published_parse
from .summary import AnnotationsImportSummary

TITLE_MAX_LENGTH = Study._meta.get_field("title").max_length
SLUG_MAX_LENGTH = Study._meta.get_field("slug").max_length
SMALLINT_MAX = 32767  # k, m, slots and batch positions are PositiveSmallIntegerFields
BULK_BATCH_SIZE = 5000


class AnnotationsImportError(DataFileError):
    pass


@dataclass
class _Assignment:
    pseudonym: str
    stage: str
    dialogue: str
    group_slot: int
    annotator_slot: int
    is_recurring: bool
    rows: list[Row]


def _plan(parsed: Parsed, problems: Problems) -> list[_Assignment]:
    """Assignments with their slots and recurrence, in order of first appearance."""
    positions = {name: i for i, name in enumerate(parsed.stages, start=1)}
    by_key: dict[tuple[str, str, str], list[Row]] = {}
    for row in parsed.rows:
        by_key.setdefault((row.pseudonym, row.stage, row.dialogue), []).append(row)
    human_stages: dict[tuple[str, str], set[int]] = defaultdict(set)
    for row in parsed.rows:
        if HUMAN_SOURCE in row.sources:
            human_stages[row.pseudonym, row.dialogue].add(positions[row.stage])
    group_slots: dict[tuple[str, str, str], int] = defaultdict(int)
    annotator_slots: dict[tuple[str, str], int] = defaultdict(int)
    plan = []
    for (pseudonym, stage, dialogue), rows in by_key.items():
        group = parsed.annotators[pseudonym][0]
        group_slots[stage, dialogue, group] += 1
        annotator_slots[pseudonym, stage] += 1
        plan.append(
            _Assignment(
                pseudonym,
                stage,
                dialogue,
                group_slots[stage, dialogue, group],
                annotator_slots[pseudonym, stage],
                any(p < positions[stage] for p in human_stages.get((pseudonym, dialogue), ())),
                rows,
            )
        )
    limits = (
        ("annotators of one group on one stage's dialogue", max(group_slots.values(), default=0)),
        ("dialogues for one annotator in one stage", max(annotator_slots.values(), default=0)),
        ("reflections in one stage's dialogue", max(map(len, parsed.batches.values()), default=0)),
    )
    for what, count in limits:
        if count > SMALLINT_MAX:
            problems.add("file", f"{count} {what}: at most {SMALLINT_MAX} can be stored")
    return plan


# --- writing -----------------------------------------------------------------------------


def _write(study: Study, parsed: Parsed, plan: list[_Assignment]) -> dict[str, int]:
    bulk = {"batch_size": BULK_BATCH_SIZE}
    stages = {
        name: (pk, position)
        for name, pk, position in study.stages.values_list("name", "id", "position")
    }
    bits = study_category_bits(study_id=study.pk)
    groups = AnnotatorGroup.objects.bulk_create(
        [
            AnnotatorGroup(study=study, name=name, pseudonym_prefix=prefix)
            for name, prefix in parsed.groups.items()
        ]
    )
    group_ids = {g.name: g.pk for g in groups}
    annotators = Annotator.objects.bulk_create(
        [
            Annotator(
                study=study,
                group_id=group_ids[group],
                number=number,
                pseudonym=pseudonym,
                is_active=False,
            )
            for pseudonym, (group, number, _prefix) in parsed.annotators.items()
        ],
        **bulk,
    )
    annotator_rows = {a.pseudonym: (a.pk, a.group_id) for a in annotators}
    contexts = DialogueContext.objects.bulk_create(
        [
            DialogueContext(study=study, external_id=dialogue, turns=c.turns)
            for dialogue, c in parsed.contexts.items()
        ],
        **bulk,
    )
    context_ids = {c.external_id: c.pk for c in contexts}
    reflection_keys = list(
        dict.fromkeys(
            (dialogue, source, text)
            for (_stage, dialogue), items in parsed.batches.items()
            for text, source in items.items()
        )
    )
    reflections = Reflection.objects.bulk_create(
        [
            Reflection(
                context_id=context_ids[dialogue],
                source=source,
                text=text,
                kind=Reflection.Kind.HUMAN if source == HUMAN_SOURCE else Reflection.Kind.SYNTHETIC,
            )
            for dialogue, source, text in reflection_keys
        ],
        **bulk,
    )
    reflection_ids = {key: r.pk for key, r in zip(reflection_keys, reflections, strict=True)}
    batches = Batch.objects.bulk_create(
        [
            Batch(stage_id=stages[stage][0], context_id=context_ids[dialogue])
            for stage, dialogue in parsed.batches
        ],
        **bulk,
    )
    batch_ids = {key: b.pk for key, b in zip(parsed.batches, batches, strict=True)}
    items, batch_order = [], {}
    for (stage, dialogue), texts in parsed.batches.items():
        # The human reflection first, as the materials import orders a batch.
        ordered = sorted(texts.items(), key=lambda item: item[1] != HUMAN_SOURCE)
        ids = [reflection_ids[dialogue, source, text] for text, source in ordered]
        batch_order[stage, dialogue] = ids
        items += [
            BatchItem(batch_id=batch_ids[stage, dialogue], reflection_id=rid, position=pos)
            for pos, rid in enumerate(ids, start=1)
        ]
    BatchItem.objects.bulk_create(items, **bulk)
    pairs = _pair_orientations(parsed) if parsed.instrument == "pairwise" else {}

    def order(a: _Assignment) -> list:
        """The pairs as the file gives them (their first row's way round stored,
        each shown as this row gives it); else the seeded shuffle of the batch."""
        if parsed.instrument == "pairwise":
            return [
                [
                    reflection_ids[a.dialogue, source, text]
                    for source, text in pairs[a.stage, a.dialogue, row.text_a, row.text_b][:2]
                ]
                + [int(pairs[a.stage, a.dialogue, row.text_a, row.text_b][2])]
                for row in a.rows
            ]
        return shuffled_order(
            batch_order[a.stage, a.dialogue],
            seed=study.seed,
            pseudonym=a.pseudonym,
            stage_position=stages[a.stage][1],
            dialogue=a.dialogue,
        )

    now = timezone.now()
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                annotator_id=annotator_rows[a.pseudonym][0],
                batch_id=batch_ids[a.stage, a.dialogue],
                group_id=annotator_rows[a.pseudonym][1],
                stage_id=stages[a.stage][0],
                group_slot=a.group_slot,
                annotator_slot=a.annotator_slot,
                order=order(a),
                status=Assignment.Status.SUBMITTED,
                is_recurring=a.is_recurring,
                assigned_at=now,
                expires_at=now + study.batch_time_limit,
                submitted_at=now,
            )
            for a in plan
        ],
        **bulk,
    )
    counts = {
        "groups": len(groups),
        "annotators": len(annotators),
        "contexts": len(contexts),
        "reflections": len(reflections),
        "batches": len(batches),
        "assignments": len(assignments),
    }
    if parsed.likert:
        return {**counts, **_write_ratings(study, parsed, plan, assignments, reflection_ids)}
    if parsed.instrument in ("pairwise", "ranking"):
        written = []
        for assignment, planned in zip(assignments, plan, strict=True):
            for entry, row in zip(assignment.order, planned.rows, strict=True):
                if parsed.instrument == "pairwise":
                    first, second, swapped = entry
                    written.append(
                        Judgement(
                            assignment_id=assignment.pk,
                            reflection_id=first,
                            opponent_id=second,
                            shown_swapped=bool(swapped),
                            choice=row.choice,
                            reason=row.reason,
                        )
                    )
                else:
                    written.append(
                        Judgement(
                            assignment_id=assignment.pk,
                            reflection_id=reflection_ids[row.dialogue, row.source, row.text],
                            rank=row.rank,
                        )
                    )
        Judgement.objects.bulk_create(written, **bulk)
        return {**counts, "judgements": len(written)}
    judgements = []
    encoded_answers: dict[tuple, EncodedAnswer] = {}  # few distinct answers: encode each once
    for assignment, planned in zip(assignments, plan, strict=True):
        for row in planned.rows:
            answer = (row.coherent, row.categories, row.most_evident, row.empathy)
            encoded = encoded_answers.get(answer) if not row.description else None
            if encoded is None:
                # Published data may carry categories, a description or both.
                encoded = answer_encode(
                    answer=Answer(*answer, description=row.description),
                    categories=bits,
                    settings=IMPORTED_ANSWERS,
                    require_complete=False,
                )
                if not row.description:
                    encoded_answers[answer] = encoded
            judgements.append(
                Judgement(
                    assignment_id=assignment.pk,
                    reflection_id=reflection_ids[row.dialogue, row.source, row.text],
                    coherent=encoded.coherent,
                    error_flags=encoded.error_flags,
                    most_evident_bit=encoded.most_evident_bit,
                    empathy=encoded.empathy,
                    error_description=encoded.error_description,
                )
            )
    Judgement.objects.bulk_create(judgements, **bulk)
    return {**counts, "judgements": len(judgements)}


def _pair_orientations(parsed: Parsed) -> dict[tuple, tuple]:
    """(stage, dialogue, text a, text b) of each row → the pair as stored
    (``(source, text)`` of its first and second candidate, the way round of its first
    row in the file) and whether this row showed it swapped."""
    stored: dict[tuple, tuple] = {}
    result = {}
    for row in parsed.rows:
        a, b = (row.source_a, row.text_a), (row.source_b, row.text_b)
        key = (row.stage, row.dialogue, frozenset((row.text_a, row.text_b)))
        first, second = stored.setdefault(key, (a, b))
        result[row.stage, row.dialogue, row.text_a, row.text_b] = (first, second, a != first)
    return result


def _write_ratings(study, parsed: Parsed, plan, assignments, reflection_ids) -> dict[str, int]:
    """The Likert format's answers: its stages rate on the dimensions of the file
    (``_likert_dimensions``), one judgement per (assignment, reflection) holding a
    rating per row."""
    dimension_ids = _likert_dimensions(study, parsed)
    judgements, ratings = [], []
    for assignment, planned in zip(assignments, plan, strict=True):
        by_reflection: dict[int, list] = {}
        for row in planned.rows:
            rid = reflection_ids[row.dialogue, row.source, row.text]
            by_reflection.setdefault(rid, []).append(row)
        for rid, rows in by_reflection.items():
            judgements.append(Judgement(assignment_id=assignment.pk, reflection_id=rid))
            ratings.append(rows)
    Judgement.objects.bulk_create(judgements, batch_size=BULK_BATCH_SIZE)
    written = LikertRating.objects.bulk_create(
        [
            LikertRating(
                judgement_id=judgement.pk,
                dimension_id=dimension_ids[row.stage, row.dimension],
                value=row.value,
                cannot_judge=row.cannot_judge,
            )
            for judgement, rows in zip(judgements, ratings, strict=True)
            for row in rows
        ],
        batch_size=BULK_BATCH_SIZE,
    )
    return {"judgements": len(judgements), "ratings": len(written)}


def _likert_dimensions(study: Study, parsed: Parsed) -> dict[tuple[str, str], int]:
    """The stages of a Likert file rate on its dimensions, in order of first appearance:
    each named and scaled as in the file, its statement its name and its end labels
    the scale's ends (the file holds neither), "cannot judge" offered where a row used
    it. Returns (stage, name) -> dimension id."""
    stages = dict(study.stages.values_list("name", "id"))
    Stage.objects.filter(study=study).update(instrument=Stage.Instrument.LIKERT)
    cannot = {(row.stage, row.dimension) for row in parsed.rows if row.cannot_judge}
    positions: dict[str, int] = defaultdict(int)
    dimensions = []
    for (stage, name), (points, _row) in parsed.dimensions.items():
        positions[stage] += 1
        low, high = likert_scale_range(points)
        n = 2 if points is None else points
        dimensions.append(
            LikertDimension(
                stage_id=stages[stage],
                position=positions[stage],
                name=name,
                statement=name,
                points=points,
                labels=[str(low), *[""] * (n - 2), str(high)],
                offers_cannot_judge=(stage, name) in cannot,
            )
        )
    LikertDimension.objects.bulk_create(dimensions)
    return {
        (stage, d.name): d.pk for (stage, _), d in zip(parsed.dimensions, dimensions, strict=True)
    }


# Imported answers may carry categories, a description or both.
IMPORTED_ANSWERS = AnswerSettings(no_answer=NO_ANSWER_BOTH)


def _stages_answer_settings(study: Study, parsed: Parsed) -> None:
    """A stage whose rows have descriptions asks for them: with categories when any of
    its rows has one, else alone (a free-text stage)."""
    described = {row.stage for row in parsed.rows if row.description}
    categorised = {row.stage for row in parsed.rows if row.categories}
    Stage.objects.filter(study=study, name__in=described & categorised).update(
        no_answer=NO_ANSWER_BOTH
    )
    Stage.objects.filter(study=study, name__in=described - categorised).update(
        no_answer=NO_ANSWER_FREE_TEXT
    )


def _study_problem(slug: str, title: str) -> Problem | None:
    if not re.fullmatch(STUDY_SLUG_REGEX, slug) or len(slug) > SLUG_MAX_LENGTH:
        return Problem(
            "study",
            f"{slug!r} is not a valid slug: lower-case letters, digits, - and _, starting with "
            f"a letter or digit, at most {SLUG_MAX_LENGTH} characters",
        )
    if not title.strip() or len(title) > TITLE_MAX_LENGTH:
        return Problem("study", f"the title must have 1 to {TITLE_MAX_LENGTH} characters")
    if Study.objects.filter(slug=slug).exists():
        return Problem(
            "study", f'a study with the slug "{slug}" already exists; the import creates a new one'
        )
    return None


def annotations_import(
    *, path_or_file, study_slug: str, title: str | None = None, spreadsheet_safe: bool = False
) -> AnnotationsImportSummary:
    """Create the closed study ``study_slug`` from a published annotation CSV (a path,
    or a file object in binary or text mode); see the module docstring. Texts are kept
    as written; ``spreadsheet_safe`` reads a file exported for spreadsheets (or by
    versions that always escaped), removing the one apostrophe the export added
    (``studies.datafiles.spreadsheet``).

    Raises AnnotationsImportError listing every problem; then nothing is written. A
    taken slug is refused before the file is read.
    """
    title = study_slug if title is None else title
    if problem := _study_problem(study_slug, title):
        raise AnnotationsImportError([problem])
    if isinstance(path_or_file, str):
        path_or_file = Path(path_or_file)  # a str is a path here, as it always was
    problems = Problems(AnnotationsImportError)
    parsed = published_parse(path_or_file, problems, spreadsheet_safe)
    problems.raise_if_any()
    plan = _plan(parsed, problems)
    problems.raise_if_any()
    overlap_k = max(a.group_slot for a in plan)
    batches_per_stage = max(a.annotator_slot for a in plan)
    # All or nothing, and never part of a larger transaction (which would hold the
    # study's lock and the written rows beyond the import).
    with transaction.atomic(durable=True):
        try:
            study = study_create(  # its own savepoint: a refusal leaves nothing behind
                slug=study_slug,
                title=title,
                stages=[(name, timedelta(0)) for name in parsed.stages],
                status=Study.Status.CLOSED,
                work_recorded=False,
                overlap_k=overlap_k,
                batches_per_stage=batches_per_stage,
            )
        except ValidationError as exc:  # checked above; only a concurrent import gets here
            raise AnnotationsImportError([Problem("study", m) for m in exc.messages]) from None
        except IntegrityError:
            raise AnnotationsImportError(
                [Problem("study", f'a study with the slug "{study_slug}" was just created')]
            ) from None
        if parsed.instrument == "coherence":
            _stages_answer_settings(study, parsed)
        elif parsed.instrument in ("pairwise", "ranking"):
            Stage.objects.filter(study=study).update(instrument=parsed.instrument)
            reasoned = {row.stage for row in parsed.rows if getattr(row, "reason", "")}
            Stage.objects.filter(study=study, name__in=reasoned).update(asks_reason=True)
        counts = _write(study, parsed, plan)
    materials_written.send(sender=Study, study_id=study.pk)
    return AnnotationsImportSummary(
        study_slug=study.slug,
        stages=len(parsed.stages),
        overlap_k=overlap_k,
        batches_per_stage=batches_per_stage,
        ignored_columns=parsed.ignored_columns,
        **counts,
    )
