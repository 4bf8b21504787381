"""The study's gates as the report's ``gated`` block reads them (one query per gate
for its decisions, one for the gated stages' answers)."""

import pandas as pd

from studies.models import Judgement, StageGate
from studies.selectors.gates import gate_flagged_decisions, gate_items
from studies.selectors.stages import stage_group_rules

from ..report.gates import DECISION_COLUMNS, GATED_ANSWER_COLUMNS, GateData


def gate_data(*, study_id: int, include_expired: bool = False) -> list[GateData]:
    """Each gate of the study, in its gated stage's order: the rule, the deciding
    stage's items (and which were decided, passed, flagged, by how strong a deciding
    majority), and the answers that count (``Judgement.analysed_q``) of the gated stage's
    groups to the coherence question."""
    gates = list(
        StageGate.objects.filter(stage__study_id=study_id)
        .select_related("stage__study", "source_stage__study", "deciding_group", "other_group")
        .order_by("stage__position")
    )
    if not gates:
        return []
    rules = stage_group_rules(study_id=study_id)
    result = []
    for gate in gates:
        flagged = set(gate_flagged_decisions(gate))
        decisions = pd.DataFrame.from_records(
            [
                (
                    reflection_id,
                    dialogue,
                    source,
                    passed,
                    pk in flagged,
                    *_deciding_votes(summary, 0),
                    *_deciding_votes(summary, 1),
                    ((summary.get("groups") or [{}])[0]).get("mean"),
                )
                for pk, reflection_id, dialogue, source, passed, summary in (
                    gate.decisions.order_by().values_list(
                        "pk",
                        "reflection_id",
                        "reflection__context__external_id",
                        "reflection__source",
                        "passed",
                        "summary",
                    )
                )
            ],
            columns=DECISION_COLUMNS,
        )
        answers = pd.DataFrame.from_records(
            Judgement.objects.filter(
                Judgement.analysed_q(include_expired=include_expired),
                assignment__stage_id=gate.stage_id,
                coherent__isnull=False,
            )
            .order_by()
            .values_list("assignment__group__name", "reflection_id", "coherent"),
            columns=GATED_ANSWER_COLUMNS,
        )
        groups = [
            g.name
            for g in gate.stage.study.groups.order_by("name")
            if rules.takes_part(gate.stage, g.pk)
        ]
        result.append(
            GateData(
                stage=gate.stage.name,
                source_stage=gate.source_stage.name,
                rule=gate.rule,
                rule_label=gate.get_rule_display(),
                deciding_group=gate.deciding_group.name,
                other_group=gate.other_group.name if gate.other_group else None,
                items=gate_items(gate).count(),
                decisions=decisions,
                answers=answers,
                gated_groups=groups,
                k=gate.stage.k,
            )
        )
    return result


def _deciding_votes(summary: dict, which: int) -> tuple[int, int]:
    """The deciding group's (``which`` 0) or the second group's (1) raters and Yes
    answers, as the decision recorded them (0, 0 for a gate of one group)."""
    groups = summary.get("groups") or []
    found = groups[which] if which < len(groups) else {}
    return found.get("raters", 0), found.get("yes", 0)
