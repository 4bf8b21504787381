"""A synthetic, valid study written straight into PostgreSQL, for the benchmarks.

``generate_study(slug=..., n_judgements=...)`` creates the study, its stages, groups,
categories and consent version through the product's service (``study_create``),
then loads contexts, reflections, batches, batch items, annotators, assignments and
judgements with ``COPY`` under ``session_replication_role = replica``: the per-row
cross-table triggers of migration 0002 (and the foreign-key triggers) are off for the
load, so :func:`study_validate` checks the same rules afterwards with aggregate SQL.
Row-level CHECK constraints and unique indexes stay enforced by PostgreSQL throughout.
Replica mode needs a superuser, which ``postgres`` on loopback is on this machine.

Structure: 2 stages × 2 groups, k = 3, m = 5; each context has a human
reflection, 8 synthetic ones per stage (6 GPT-2/GPT-3, 2 BART) and an attention check;
about 14 dialogue turns. Stage 2 keeps a quarter of the contexts at the same
assignment position as stage 1, so their annotators meet the context again
(``is_recurring``). Each item has a latent label; an annotator reports it with
probability ``agreement`` and flips a fair coin otherwise, so the kappas follow
``agreement``. Incoherent answers pick one or two categories (a most evident error
among them), coherent ones an empathy rating; attention checks are mostly failed
(judged No / off topic), so most annotators pass them.

``n_judgements`` counts the judgements the analysis and the published export read
(attention-check answers come on top, one per assignment); the study gets the whole
number of contexts nearest to it, so the actual count is within ±54 of it.
"""

from __future__ import annotations

import argparse
import json
import math
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

STAGES = ("GPT-2 stage", "GPT-3 stage")
GROUPS = ("Expert", "Layperson")
K = 3
M = 5
N_SYNTHETIC = 8  # per stage: 6 from the stage's model, 2 from BART
ITEMS_PER_BATCH = 1 + N_SYNTHETIC + 1  # human + synthetic + attention check
ANALYSED_PER_ASSIGNMENT = ITEMS_PER_BATCH - 1
JUDGEMENTS_PER_CONTEXT = len(STAGES) * len(GROUPS) * K * ANALYSED_PER_ASSIGNMENT  # 108
# A pairwise study's batch (``pairwise=True``): every pair of its human and synthetic
# candidates from different sources (the human against 8, the stage's model against
# BART: 8 + 12), then the attention pair (the off-topic candidate against the human).
PAIRS_PER_BATCH = 20
PAIRWISE_PER_CONTEXT = len(STAGES) * len(GROUPS) * K * PAIRS_PER_BATCH  # 240
TIE_SHARE = 0.08
REFLECTIONS_PER_CONTEXT = 1 + len(STAGES) * N_SYNTHETIC + 1  # 18
N_TURNS = 14
RECURRING_SHARE = 0.25

WORDS = [
    "i",
    "just",
    "feel",
    "like",
    "nobody",
    "listens",
    "when",
    "i",
    "try",
    "to",
    "explain",
    "what",
    "is",
    "going",
    "on",
    "at",
    "home",
    "and",
    "work",
    "it-it",
    "whatever",
    "keeps",
    "piling",
    "up",
    "so",
    "i",
    "drink",
    "a",
    "bit",
    "more",
    "than",
    "i",
    "used",
    "to",
    "maybe",
    "because",
    "my",
    "sister",
    "says",
    "i",
    "should",
    "cut",
    "down",
    "but",
    "honestly",
    "it",
    "helps",
    "me",
    "sleep",
]


@dataclass(frozen=True)
class Generated:
    study_id: int
    slug: str
    n_contexts: int
    n_annotators: int
    n_assignments: int
    n_judgements: int  # analysed: human + synthetic items
    n_judgement_rows: int  # all rows, attention checks included
    seconds: float


def _sentence(rng: np.random.Generator, n_words: int) -> str:
    words = rng.choice(WORDS, size=n_words)
    return " ".join(words).capitalize() + "."


def _allocate_ids(cursor, table: str, count: int) -> int:
    """Reserve ``count`` consecutive ids of ``table``'s sequence; returns the first.
    The benchmark database has one writer, so a block move of the sequence is safe."""
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    (sequence,) = cursor.fetchone()
    cursor.execute("SELECT nextval(%s)", [sequence])
    (first,) = cursor.fetchone()
    cursor.execute("SELECT setval(%s, %s)", [sequence, first + count - 1])
    return first


def _copy(cursor, table: str, columns: tuple[str, ...], rows) -> None:
    quoted = ", ".join(f'"{c}"' for c in columns)
    with cursor.cursor.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


#: A Likert study's dimensions (``likert=True``), in each stage: the attention check's
#: on 5 points, and a slider with "cannot judge".
LIKERT_DIMENSIONS = (
    {"position": 1, "name": "fluency", "statement": "Fluent.", "points": 5,
     "labels": ["poor", "", "", "", "excellent"], "checks_attention": True,
     "attention_pass_min": 1, "attention_pass_max": 1},
    {"position": 2, "name": "warmth", "statement": "Warm.", "points": None,
     "labels": ["cold", "warm"], "offers_cannot_judge": True},
)  # fmt: skip
CANNOT_JUDGE_SHARE = 0.03


def generate_study(
    *,
    slug: str,
    n_judgements: int,
    agreement: float = 0.7,
    seed: int = 0,
    likert: bool = False,
    pairwise: bool = False,
) -> Generated:
    """Create study ``slug`` with about ``n_judgements`` analysed judgements in the
    configured (PostgreSQL) database, and check it with :func:`study_validate`. With
    ``likert`` its stages rate on ``LIKERT_DIMENSIONS`` instead: each answer holds one
    rating per dimension (an item's latent quality, reported within one point or 15
    slider points with probability ``agreement``, else anywhere on the scale). With
    ``pairwise`` its stages compare pairs (``PAIRS_PER_BATCH`` and the attention pair
    per batch; ``n_judgements`` counts the analysed choices): the candidate of higher
    latent quality wins with probability ``agreement`` (else a coin decides), and
    ``TIE_SHARE`` of the answers are ties."""
    from django.db import connection, transaction
    from django.utils import timezone

    from studies.models import ErrorCategory, LikertDimension, Stage
    from studies.services import consent_version_current, study_create

    if not 0 <= agreement <= 1:
        raise ValueError("agreement must be between 0 and 1")
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    per_context = PAIRWISE_PER_CONTEXT if pairwise else JUDGEMENTS_PER_CONTEXT
    n_contexts = max(2, round(n_judgements / per_context))
    n_annotators = max(K, math.ceil(K * n_contexts / M))  # per group
    n_stages, n_groups = len(STAGES), len(GROUPS)
    now = timezone.now()

    with transaction.atomic():
        study = study_create(
            slug=slug,
            title=f"Benchmark study {slug}",
            stages=[(name, timedelta(days=3)) for name in STAGES],
            groups=list(GROUPS),
            information_sheet="Synthetic benchmark study.",
            consent_text="I agree.",
            overlap_k=K,
            batches_per_stage=M,
            seed=seed,
        )
        stage_ids = list(
            Stage.objects.filter(study=study).order_by("position").values_list("pk", flat=True)
        )
        dimension_ids = []  # per stage: the ids of LIKERT_DIMENSIONS
        if pairwise:
            Stage.objects.filter(pk__in=stage_ids).update(instrument=Stage.Instrument.PAIRWISE)
        if likert:
            Stage.objects.filter(pk__in=stage_ids).update(instrument=Stage.Instrument.LIKERT)
            for stage_id in stage_ids:
                dimension_ids.append(
                    [
                        LikertDimension.objects.create(stage_id=stage_id, **d).pk
                        for d in LIKERT_DIMENSIONS
                    ]
                )
        group_ids = [study.groups.get(name=name).pk for name in GROUPS]
        prefixes = list(GROUPS)
        bits = dict(ErrorCategory.objects.filter(study=study).values_list("slug", "bit"))
        category_bits = np.array(sorted(bits.values()), dtype=np.int64)
        off_topic = bits["off_topic"]
        consent_id = consent_version_current(study=study).pk

        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")

            # --- contexts and reflections -------------------------------------------
            context0 = _allocate_ids(cursor, "studies_dialoguecontext", n_contexts)
            context_ids = context0 + np.arange(n_contexts)
            turns_pool = [
                {"role": role, "text": _sentence(rng, int(rng.integers(8, 22)))}
                for role in ("therapist", "client")
                for _ in range(200)
            ]
            contexts = []
            for c in range(n_contexts):
                picks = rng.integers(0, 200, size=N_TURNS)
                turns = [turns_pool[(t % 2) * 200 + p] for t, p in enumerate(picks)]
                turns[-1] = {"role": "client", "text": f"And that is dialogue {c}, really."}
                contexts.append(
                    (int(context_ids[c]), f"annomi-{c:07d}", json.dumps(turns), now, study.pk)
                )
            _copy(
                cursor,
                "studies_dialoguecontext",
                ("id", "external_id", "turns", "created_at", "study_id"),
                contexts,
            )

            reflection0 = _allocate_ids(
                cursor, "studies_reflection", n_contexts * REFLECTIONS_PER_CONTEXT
            )
            # Per context: [human, stage-1 synthetic × 8, stage-2 synthetic × 8, attention].
            slots_source = ["Human"]
            slots_kind = ["human"]
            for stage_model in ("GPT-2", "GPT-3"):
                for j in range(N_SYNTHETIC):
                    slots_source.append("BART" if j >= 6 else stage_model)
                    slots_kind.append("synthetic")
            slots_source.append("Attention check")
            slots_kind.append("attention_check")
            # GPT-2's nucleus p takes the four values of the papers by context, so the
            # report's trend along p and its crossed settings (model × p) have work.
            nucleus = [
                json.dumps({"model": "gpt2", "decoding": "nucleus", "p": p})
                for p in (0.4, 0.6, 0.8, 0.95)
            ]
            generation = {
                "GPT-3": json.dumps({"model": "gpt3", "decoding": "greedy"}),
                "BART": json.dumps({"model": "bart", "decoding": "beam"}),
            }

            def reflections():
                for c in range(n_contexts):
                    for j, (source, kind) in enumerate(zip(slots_source, slots_kind, strict=True)):
                        if kind == "human":
                            text = f"So dialogue {c} leaves you feeling stuck and unheard."
                        elif kind == "attention_check":
                            text = "The moon landing was filmed in a studio, apparently."
                        else:
                            text = f"It sounds like {c} and {j}: {' '.join(WORDS[j : j + 9])}."
                        yield (
                            reflection0 + c * REFLECTIONS_PER_CONTEXT + j,
                            text,
                            source,
                            kind,
                            nucleus[c % 4] if source == "GPT-2" else generation.get(source, "{}"),
                            now,
                            int(context_ids[c]),
                        )

            _copy(
                cursor,
                "studies_reflection",
                ("id", "text", "source", "kind", "generation", "created_at", "context_id"),
                reflections(),
            )

            # --- batches and their items (position p: human, synthetic, attention) --
            batch0 = _allocate_ids(cursor, "studies_batch", n_stages * n_contexts)
            _copy(
                cursor,
                "studies_batch",
                ("id", "created_at", "context_id", "stage_id"),
                (
                    (batch0 + s * n_contexts + c, now, int(context_ids[c]), stage_ids[s])
                    for s in range(n_stages)
                    for c in range(n_contexts)
                ),
            )
            # item_slot[s, p]: the context-relative reflection slot of position p in stage s
            item_slot = np.array(
                [
                    [
                        0,
                        *range(1 + s * N_SYNTHETIC, 1 + (s + 1) * N_SYNTHETIC),
                        REFLECTIONS_PER_CONTEXT - 1,
                    ]
                    for s in range(n_stages)
                ]
            )
            item0 = _allocate_ids(
                cursor, "studies_batchitem", n_stages * n_contexts * ITEMS_PER_BATCH
            )
            _copy(
                cursor,
                "studies_batchitem",
                ("id", "position", "batch_id", "reflection_id"),
                (
                    (
                        item0 + (s * n_contexts + c) * ITEMS_PER_BATCH + p,
                        p + 1,
                        batch0 + s * n_contexts + c,
                        reflection0 + c * REFLECTIONS_PER_CONTEXT + int(item_slot[s, p]),
                    )
                    for s in range(n_stages)
                    for c in range(n_contexts)
                    for p in range(ITEMS_PER_BATCH)
                ),
            )

            # --- annotators ----------------------------------------------------------
            annotator0 = _allocate_ids(cursor, "studies_annotator", n_groups * n_annotators)
            _copy(
                cursor,
                "studies_annotator",
                (
                    "id",
                    "number",
                    "pseudonym",
                    "access_token",
                    "is_active",
                    "platform",
                    "platform_participant_id",
                    "platform_data",
                    "email",
                    "consented_at",
                    "tutorial_completed_at",
                    "created_at",
                    "group_id",
                    "consented_version_id",
                    "study_id",
                ),
                (
                    (
                        annotator0 + g * n_annotators + a,
                        a + 1,
                        f"{prefixes[g]} {a + 1}",
                        secrets.token_urlsafe(24),
                        True,
                        "",
                        "",
                        "{}",
                        "",
                        now,
                        now,
                        now,
                        group_ids[g],
                        consent_id,
                        study.pk,
                    )
                    for g in range(n_groups)
                    for a in range(n_annotators)
                ),
            )

            # --- assignments: position i of a stage holds batch i // k, group slot
            # i % k + 1, annotator i % A and annotator slot i // A + 1 (≤ m as k·C ≤ m·A).
            per_stage = K * n_contexts
            positions = np.arange(per_stage)
            annotator_of = positions % n_annotators
            annotator_slot = positions // n_annotators + 1
            group_slot = positions % K + 1
            # Stage 2 keeps a quarter of the contexts where they were (recurring for the
            # same annotators) and shuffles the rest.
            order2 = rng.permutation(n_contexts)
            keep = rng.random(n_contexts) < RECURRING_SHARE
            moved = np.flatnonzero(~keep)
            order2[keep] = np.flatnonzero(keep)
            order2[moved] = rng.permutation(moved)
            context_at = [np.arange(n_contexts), order2]

            rows_s, rows_g, rows_ctx, rows_ann, rows_gslot, rows_aslot = [], [], [], [], [], []
            for s in range(n_stages):
                for g in range(n_groups):
                    rows_s.append(np.full(per_stage, s))
                    rows_g.append(np.full(per_stage, g))
                    rows_ctx.append(context_at[s][positions // K])
                    rows_ann.append(g * n_annotators + annotator_of)
                    rows_gslot.append(group_slot)
                    rows_aslot.append(annotator_slot)
            a_stage = np.concatenate(rows_s)
            a_group = np.concatenate(rows_g)
            a_context = np.concatenate(rows_ctx)
            a_annotator = np.concatenate(rows_ann)
            a_gslot = np.concatenate(rows_gslot)
            a_aslot = np.concatenate(rows_aslot)
            n_assign = len(a_stage)
            seen_first = set(
                zip(
                    a_annotator[a_stage == 0].tolist(),
                    a_context[a_stage == 0].tolist(),
                    strict=True,
                )
            )
            a_recurring = np.array(
                [
                    s == 1 and (a, c) in seen_first
                    for s, a, c in zip(
                        a_stage.tolist(), a_annotator.tolist(), a_context.tolist(), strict=True
                    )
                ]
            )
            # Reflection ids per assignment (item positions), shuffled per annotator.
            a_items = (
                reflection0 + a_context[:, None] * REFLECTIONS_PER_CONTEXT + item_slot[a_stage]
            )
            a_order = rng.permuted(a_items, axis=1)
            order_json = ["[" + ", ".join(map(str, row.tolist())) + "]" for row in a_order]

            # --- answers --------------------------------------------------------------
            n_items = n_assign * ITEMS_PER_BATCH
            j_reflection = a_items.reshape(-1)
            j_slot = np.tile(np.arange(ITEMS_PER_BATCH), n_assign)
            j_kind_slot = item_slot[np.repeat(a_stage, ITEMS_PER_BATCH), j_slot]
            is_attention = j_slot == ITEMS_PER_BATCH - 1
            is_human = j_slot == 0
            is_bart = np.array([src == "BART" for src in slots_source])[j_kind_slot]
            # Latent item truths, keyed by reflection (shared by groups and stages).
            n_reflections = n_contexts * REFLECTIONS_PER_CONTEXT
            truth_u = rng.random(n_reflections)
            primary = rng.choice(category_bits, size=n_reflections)
            secondary = rng.choice(category_bits, size=n_reflections)
            has_secondary = rng.random(n_reflections) < 0.35
            latent_empathy = rng.integers(2, 6, size=n_reflections)
            r = j_reflection - reflection0
            p_coherent = np.where(is_human, 0.85, np.where(is_bart, 0.4, 0.55))
            truth = truth_u[r] < p_coherent
            follows = rng.random(n_items) < agreement
            coherent = np.where(follows, truth, rng.random(n_items) < 0.5)
            # Categories on No: the item's own set when following it, else a random one.
            own = (1 << primary[r]) | np.where(has_secondary[r], 1 << secondary[r], 0)
            rand_primary = rng.choice(category_bits, size=n_items)
            rand_second = rng.choice(category_bits, size=n_items)
            rand_set = (1 << rand_primary) | np.where(
                rng.random(n_items) < 0.3, 1 << rand_second, 0
            )
            follows_cat = rng.random(n_items) < agreement
            flags = np.where(follows_cat, own, rand_set)
            mee = np.where(follows_cat, primary[r], rand_primary)
            # Attention checks: mostly judged No / off topic (passed).
            attention_no = rng.random(n_items) < 0.95
            coherent = np.where(is_attention, ~attention_no, coherent)
            flags = np.where(is_attention, 1 << off_topic, flags)
            mee = np.where(is_attention, off_topic, mee)
            flags = np.where(coherent, 0, flags)
            empathy = np.clip(latent_empathy[r] + rng.integers(-1, 2, size=n_items), 1, 5)
            seconds = np.round(rng.uniform(4, 90, size=n_items), 1)
            attention_passed = ~coherent.reshape(n_assign, ITEMS_PER_BATCH)[:, -1]
            if likert:
                # An item's latent quality in [0, 1]: each rating reports it closely
                # with probability ``agreement``, else anywhere on the scale.
                quality = np.clip(truth_u[r] * 0.8 + np.where(is_human, 0.2, 0.0), 0, 1)
                close = rng.random((2, n_items)) < agreement
                fluency = np.where(
                    close[0],
                    np.clip(np.rint(1 + 4 * quality) + rng.integers(-1, 2, n_items), 1, 5),
                    rng.integers(1, 6, n_items),
                )
                fluency = np.where(is_attention & (rng.random(n_items) < 0.95), 1, fluency)
                warmth = np.where(
                    close[1],
                    np.clip(np.rint(100 * quality + rng.normal(0, 15, n_items)), 0, 100),
                    rng.integers(0, 101, n_items),
                )
                cannot = rng.random(n_items) < CANNOT_JUDGE_SHARE
                attention_passed = fluency.reshape(n_assign, ITEMS_PER_BATCH)[:, -1] == 1

            if pairwise:
                pairs = _pairwise_answers(
                    rng, a_items, item_slot[a_stage], slots_source, truth_u, reflection0, agreement
                )
                order_json, attention_passed = pairs["order_json"], pairs["attention_passed"]

            # --- write assignments and judgements -------------------------------------
            assignment0 = _allocate_ids(cursor, "studies_assignment", n_assign)
            start = now - timedelta(days=30)
            stage_start = [start, start + timedelta(days=10)]
            minutes = rng.integers(0, 60 * 24 * 5, size=n_assign)
            assigned_at = [
                stage_start[s] + timedelta(minutes=int(mm))
                for s, mm in zip(a_stage.tolist(), minutes.tolist(), strict=True)
            ]
            _copy(
                cursor,
                "studies_assignment",
                (
                    "id",
                    "group_slot",
                    "annotator_slot",
                    "order",
                    "status",
                    "is_recurring",
                    "assigned_at",
                    "expires_at",
                    "started_at",
                    "submitted_at",
                    "rejection_reason",
                    "attention_passed",
                    "updated_at",
                    "annotator_id",
                    "group_id",
                    "batch_id",
                    "stage_id",
                ),
                (
                    (
                        assignment0 + i,
                        int(a_gslot[i]),
                        int(a_aslot[i]),
                        order_json[i],
                        "submitted",
                        bool(a_recurring[i]),
                        assigned_at[i],
                        assigned_at[i] + timedelta(minutes=30),
                        assigned_at[i] + timedelta(minutes=1),
                        assigned_at[i] + timedelta(minutes=14),
                        "",
                        bool(attention_passed[i]),
                        assigned_at[i] + timedelta(minutes=14),
                        annotator0 + int(a_annotator[i]),
                        group_ids[int(a_group[i])],
                        batch0 + int(a_stage[i]) * n_contexts + int(a_context[i]),
                        stage_ids[int(a_stage[i])],
                    )
                    for i in range(n_assign)
                ),
            )
            if pairwise:
                n_items = _pairwise_write(cursor, pairs, assignment0, assigned_at)
            judgement0 = None if pairwise else _allocate_ids(cursor, "studies_judgement", n_items)
            j_assignment = assignment0 + np.repeat(np.arange(n_assign), ITEMS_PER_BATCH)
            when = [t + timedelta(minutes=10) for t in assigned_at]
            columns = (
                "id",
                "coherent",
                "error_flags",
                "most_evident_bit",
                "empathy",
                "seconds_spent",
                "created_at",
                "updated_at",
                "assignment_id",
                "reflection_id",
            )
            if likert:  # a Likert answer has none of the coherence protocol's fields
                answers = (
                    [None] * n_items,
                    [0] * n_items,
                    [None] * n_items,
                    [None] * n_items,
                )
            else:
                answers = (
                    coherent.tolist(),
                    flags.tolist(),
                    [
                        None if c else int(b)
                        for c, b in zip(coherent.tolist(), mee.tolist(), strict=True)
                    ],
                    [
                        int(e) if c else None
                        for c, e in zip(coherent.tolist(), empathy.tolist(), strict=True)
                    ],
                )
            _copy(
                cursor,
                "studies_judgement",
                columns,
                ()
                if pairwise
                else zip(
                    (judgement0 + np.arange(n_items)).tolist(),
                    *answers,
                    seconds.tolist(),
                    (w for w in when for _ in range(ITEMS_PER_BATCH)),
                    (w for w in when for _ in range(ITEMS_PER_BATCH)),
                    j_assignment.tolist(),
                    j_reflection.tolist(),
                    strict=True,
                ),
            )
            if likert:
                rating0 = _allocate_ids(cursor, "studies_likertrating", 2 * n_items)
                j_stage = np.repeat(a_stage, ITEMS_PER_BATCH)
                dims = np.array(dimension_ids)[j_stage]  # (n_items, 2)
                judgement_ids = (judgement0 + np.arange(n_items)).tolist()
                _copy(
                    cursor,
                    "studies_likertrating",
                    ("id", "value", "cannot_judge", "dimension_id", "judgement_id"),
                    (
                        row
                        for i, j in enumerate(judgement_ids)
                        for row in (
                            (rating0 + 2 * i, int(fluency[i]), False, int(dims[i, 0]), j),
                            (
                                rating0 + 2 * i + 1,
                                None if cannot[i] else int(warmth[i]),
                                bool(cannot[i]),
                                int(dims[i, 1]),
                                j,
                            ),
                        )
                    ),
                )
            cursor.execute("SET LOCAL session_replication_role = DEFAULT")
        problems = study_validate(study_id=study.pk)
        if problems:
            raise RuntimeError("Generated data breaks the model's rules: " + "; ".join(problems))
    with connection.cursor() as cursor:
        for table in (
            "studies_judgement",
            "studies_likertrating",
            "studies_assignment",
            "studies_batchitem",
            "studies_reflection",
        ):
            cursor.execute(f"ANALYZE {table}")
    return Generated(
        study_id=study.pk,
        slug=slug,
        n_contexts=n_contexts,
        n_annotators=n_groups * n_annotators,
        n_assignments=n_assign,
        n_judgements=n_assign * (PAIRS_PER_BATCH if pairwise else ANALYSED_PER_ASSIGNMENT),
        n_judgement_rows=n_items,
        seconds=time.perf_counter() - started,
    )


def _pairwise_answers(rng, a_items, a_slots, slots_source, truth_u, reflection0, agreement) -> dict:
    """A pairwise study's answers: per assignment its pairs (positions in the batch),
    the sides shown, the choices, its order and whether its attention pair passed."""
    sources = np.array(slots_source, dtype=object)
    slots = a_slots[0]  # the stages' batches hold positions of the same sources
    pairs = [
        (p, q)
        for p in range(ITEMS_PER_BATCH - 1)
        for q in range(p + 1, ITEMS_PER_BATCH - 1)
        if sources[slots[p]] != sources[slots[q]]
    ]
    assert len(pairs) == PAIRS_PER_BATCH, len(pairs)
    pairs.append((ITEMS_PER_BATCH - 1, 0))  # the off-topic candidate first
    p_first = np.array([p for p, _ in pairs])
    p_second = np.array([q for _, q in pairs])
    first, second = a_items[:, p_first], a_items[:, p_second]
    n_assign, n_pairs = first.shape
    quality = truth_u[first - reflection0] - truth_u[second - reflection0]
    first_better = rng.random(quality.shape) < 1 / (1 + np.exp(-4 * quality))
    follows = rng.random(quality.shape) < agreement
    first_wins = np.where(follows, first_better, rng.random(quality.shape) < 0.5)
    tie = rng.random(quality.shape) < TIE_SHARE
    # The attention pair: the off-topic candidate loses, mostly.
    first_wins[:, -1] = rng.random(n_assign) < 0.05
    tie[:, -1] = False
    swapped = rng.random(quality.shape) < 0.5
    choice = np.where(tie, "Tie", np.where(first_wins != swapped, "A", "B"))
    shuffled = rng.permuted(np.tile(np.arange(n_pairs), (n_assign, 1)), axis=1)
    order_json = [
        json.dumps([[int(first[i, k]), int(second[i, k]), int(swapped[i, k])] for k in shuffled[i]])
        for i in range(n_assign)
    ]
    return {
        "first": first,
        "second": second,
        "swapped": swapped,
        "choice": choice,
        "order_json": order_json,
        "attention_passed": ~first_wins[:, -1],
    }


PAIRWISE_JUDGEMENT_COLUMNS = (
    "id", "error_flags", "seconds_spent", "created_at", "updated_at", "assignment_id",
    "reflection_id", "opponent_id", "shown_swapped", "choice",
)  # fmt: skip


def _pairwise_write(cursor, pairs: dict, assignment0: int, assigned_at) -> int:
    """The pairwise answers as judgements (``COPY``); returns how many."""
    first, second = pairs["first"], pairs["second"]
    n_assign, n_pairs = first.shape
    n_items = n_assign * n_pairs
    judgement0 = _allocate_ids(cursor, "studies_judgement", n_items)
    when = [t + timedelta(minutes=10) for t in assigned_at]
    _copy(
        cursor,
        "studies_judgement",
        PAIRWISE_JUDGEMENT_COLUMNS,
        (
            (
                judgement0 + i * n_pairs + k,
                0,
                12.5,
                when[i],
                when[i],
                assignment0 + i,
                int(first[i, k]),
                int(second[i, k]),
                bool(pairs["swapped"][i, k]),
                str(pairs["choice"][i, k]),
            )
            for i in range(n_assign)
            for k in range(n_pairs)
        ),
    )
    return n_items


#: name: SQL counting the rows of study %(study)s that break the rule (0 when valid).
#: The cross-table rules of migration 0002, the foreign keys (whose triggers replica
#: mode also turns off) and the protocol's caps.
CHECKS = {
    "likert rating on a dimension of its judgement's stage": """
        SELECT count(*) FROM studies_likertrating lr
        JOIN studies_judgement j ON j.id = lr.judgement_id
        JOIN studies_assignment a ON a.id = j.assignment_id
        JOIN studies_stage st ON st.id = a.stage_id AND st.study_id = %(study)s
        LEFT JOIN studies_likertdimension d ON d.id = lr.dimension_id
        WHERE d.id IS NULL OR d.stage_id <> a.stage_id""",
    "judgement reflection in its assignment's batch": """
        SELECT count(*) FROM studies_judgement j JOIN studies_assignment a ON a.id = j.assignment_id
        LEFT JOIN studies_batchitem bi ON bi.batch_id = a.batch_id AND bi.reflection_id = j.reflection_id
        WHERE a.stage_id IN (SELECT id FROM studies_stage WHERE study_id = %(study)s) AND bi.id IS NULL""",
    "judgement categories belong to the study": """
        SELECT count(*) FROM studies_judgement j JOIN studies_assignment a ON a.id = j.assignment_id
        JOIN studies_stage st ON st.id = a.stage_id AND st.study_id = %(study)s
        WHERE j.error_flags & ~(SELECT coalesce(bit_or(1 << bit), 0) FROM studies_errorcategory
                                WHERE study_id = %(study)s) <> 0""",
    "judgement foreign keys": """
        SELECT count(*) FROM studies_judgement j JOIN studies_assignment a ON a.id = j.assignment_id
        JOIN studies_stage st ON st.id = a.stage_id AND st.study_id = %(study)s
        LEFT JOIN studies_reflection r ON r.id = j.reflection_id WHERE r.id IS NULL""",
    "batch item reflection from the batch's context": """
        SELECT count(*) FROM studies_batchitem bi JOIN studies_batch b ON b.id = bi.batch_id
        JOIN studies_stage st ON st.id = b.stage_id AND st.study_id = %(study)s
        LEFT JOIN studies_reflection r ON r.id = bi.reflection_id
        WHERE r.id IS NULL OR r.context_id <> b.context_id""",
    "batch stage and context in one study": """
        SELECT count(*) FROM studies_batch b JOIN studies_stage st ON st.id = b.stage_id
        LEFT JOIN studies_dialoguecontext c ON c.id = b.context_id
        WHERE st.study_id = %(study)s AND (c.id IS NULL OR c.study_id <> st.study_id)""",
    "assignment group, stage and study match annotator and batch": """
        SELECT count(*) FROM studies_assignment a
        LEFT JOIN studies_annotator an ON an.id = a.annotator_id
        LEFT JOIN studies_batch b ON b.id = a.batch_id
        JOIN studies_stage st ON st.id = a.stage_id AND st.study_id = %(study)s
        WHERE an.id IS NULL OR b.id IS NULL OR an.group_id <> a.group_id
           OR b.stage_id <> a.stage_id OR an.study_id <> st.study_id""",
    "assignment slots within k and m": """
        SELECT count(*) FROM studies_assignment a JOIN studies_stage st ON st.id = a.stage_id
        JOIN studies_study s ON s.id = st.study_id AND s.id = %(study)s
        WHERE a.group_slot > s.overlap_k OR a.annotator_slot > s.batches_per_stage""",
    "annotator group in the annotator's study": """
        SELECT count(*) FROM studies_annotator an JOIN studies_annotatorgroup g ON g.id = an.group_id
        WHERE an.study_id = %(study)s AND g.study_id <> an.study_id""",
    "recurring flag matches an earlier stage": """
        SELECT count(*) FROM studies_assignment a JOIN studies_batch b ON b.id = a.batch_id
        JOIN studies_stage st ON st.id = a.stage_id AND st.study_id = %(study)s
        WHERE a.is_recurring <> EXISTS (
            SELECT 1 FROM studies_assignment a2 JOIN studies_batch b2 ON b2.id = a2.batch_id
            JOIN studies_stage st2 ON st2.id = a2.stage_id
            WHERE a2.annotator_id = a.annotator_id AND b2.context_id = b.context_id
              AND st2.position < st.position)""",
}


def study_validate(*, study_id: int) -> list[str]:
    """The rules the disabled triggers would have enforced, checked in aggregate:
    the names of the broken ones with their row counts (empty: all hold)."""
    from django.db import connection

    problems = []
    with connection.cursor() as cursor:
        for name, sql in CHECKS.items():
            cursor.execute(sql, {"study": study_id})
            (count,) = cursor.fetchone()
            if count:
                problems.append(f"{name}: {count} rows")
    return problems


def main(argv: list[str] | None = None) -> None:
    import django

    parser = argparse.ArgumentParser(description="Write a synthetic study into DATABASE_URL.")
    parser.add_argument("--slug", required=True)
    parser.add_argument("--judgements", type=int, required=True)
    parser.add_argument("--agreement", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    django.setup()
    result = generate_study(
        slug=args.slug, n_judgements=args.judgements, agreement=args.agreement, seed=args.seed
    )
    print(
        f"{result.slug}: {result.n_judgements:,} judgements analysed "
        f"({result.n_judgement_rows:,} rows with attention checks), {result.n_contexts:,} "
        f"contexts, {result.n_annotators:,} annotators, {result.n_assignments:,} assignments, "
        f"valid, in {result.seconds:.1f} s"
    )


if __name__ == "__main__":
    main()
