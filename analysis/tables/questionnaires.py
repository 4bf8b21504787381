"""The report's questionnaire table: one row per questionnaire, question and group
(screened-out people last), with how many answered and the counts per choice or the
mean of a 1–5 scale. Text answers are counted, never shown."""

from __future__ import annotations

from .model import Key, Measure, Table, at, build_table
from .walk import group_order

SCREENED_OUT_LABEL = "Screened out"


def _answers(counts, choices) -> str:
    """ "Yes: 3 · No: 1", choices in the questionnaire's order (JSONB kept no order)."""
    if not counts:
        return ""
    ordered = [c for c in choices if c in counts] + [c for c in counts if c not in choices]
    return " · ".join(f"{choice}: {counts[choice]}" for choice in ordered)


def questionnaire_entries(report: dict) -> list[tuple[tuple, dict]]:
    """((questionnaire, question, group, answers), entry) in the order annotators meet
    the questionnaires, groups in report order, screened-out people last."""
    blocks = report.get("questionnaires") or {}
    screened_out = report.get("questionnaires_screened_out") or {}
    order = report.get("questionnaire_order") or [
        {"name": name, "questions": list(questions)} for name, questions in blocks.items()
    ]
    entries = []
    for questionnaire in order:
        name = questionnaire["name"]
        for question in questionnaire.get("questions") or []:
            by_group = (blocks.get(name) or {}).get(question) or {}
            groups = [g for g in group_order(report) if g in by_group]
            groups += sorted(g for g in by_group if g not in groups)
            rows = [(group, by_group[group]) for group in groups]
            if (out := (screened_out.get(name) or {}).get(question)) is not None:
                rows.append((SCREENED_OUT_LABEL, out))
            choices = (questionnaire.get("choices") or {}).get(question) or []
            for label, entry in rows:
                entry = entry or {}
                answers = _answers(entry.get("counts"), choices)
                entries.append(((name, question, label, answers), entry))
    return entries


def questionnaire_table(report: dict) -> Table:
    return build_table(
        slug="questionnaires",
        caption="Questionnaires",
        keys=[
            Key("Questionnaire", ("questionnaire",)),
            Key("Question", ("question",), header=False),
            Key("Group", ("group",), header=False),
            Key("Answers", ("answers",), header=False),
        ],
        measures=[
            Measure("n", "Answered", "questionnaire_n", at("n"), "count"),
            Measure("mean", "Mean (1–5)", "questionnaire_mean", at("mean"), digits=2),
        ],
        entries=questionnaire_entries(report),
        note="Counts per choice (several choices: a person may tick more than one), or the "
        "mean of a 1–5 question; written answers are counted here and listed only in the "
        "questionnaire answers export. Screened out: people a screening answer ended, from "
        "the counts kept about them.",
        empty="No questionnaire answers yet.",
    )
