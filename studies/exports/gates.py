"""Which gate let each item in: the ``gate`` column of every export covering a gated
stage (``StageGate.describe`` on each row of that stage, empty on the rows of other
stages), and the full export's ``gate_decided_at`` (when the item's decision was
made)."""

from __future__ import annotations

from datetime import datetime

from ..models import GateDecision, StageGate, Study
from .options import ExportOptions


def gate_labels(*, study: Study, options: ExportOptions, instrument: str) -> dict[str, str]:
    """Stage name → its gate's description, for the gated stages of ``instrument``
    the export covers (empty: the file has no ``gate`` column)."""
    gates = StageGate.objects.filter(
        stage__study=study, stage__instrument=instrument
    ).select_related(
        "stage", "source_stage", "deciding_group", "other_group", "category", "dimension"
    )
    if options.stages:
        gates = gates.filter(stage__name__in=options.stages)
    return {gate.stage.name: gate.describe() for gate in gates}


def gate_decision_times(*, study: Study) -> dict[tuple[str, int], datetime]:
    """(gated stage's name, reflection id) → when its gate let the item in."""
    return {
        (stage, reflection_id): decided_at
        for stage, reflection_id, decided_at in GateDecision.objects.filter(
            gate__stage__study=study, passed=True
        ).values_list("gate__stage__name", "reflection_id", "decided_at")
    }
