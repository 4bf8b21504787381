"""The report's free-text description tables: how many "No" answers carry a
description and what the primary coder found in them, the codes per source (the
figure's numbers) and the agreement of two coders per code."""

from __future__ import annotations

from .model import GROUP, STAGE, Key, Measure, Table, at, build_table
from .walk import group_order, stage_order

SECTION = "Free-text descriptions"
SECTION_INTRO = (
    "What annotators wrote when they answered No, as coded by the study's primary coder "
    "into its codebook; a second coder's codes measure how consistently the codes are "
    "applied."
)


def codebook_labels(report: dict) -> list[tuple[str, str]]:
    """(slug, label) of the study's codes, in the codebook's order."""
    return [(c["slug"], c.get("label") or c["slug"]) for c in report.get("codebook") or []]


def description_cells(report: dict) -> list[tuple[str, str, dict]]:
    """(group, stage, descriptions entry) for every analysed group × stage, in order."""
    per_group = report.get("descriptions") or {}
    return [
        (group, stage, entry)
        for group in group_order(report)
        for stage in stage_order(report)
        if (entry := (per_group.get(group) or {}).get(stage)) is not None
    ]


def has_descriptions(report: dict) -> bool:
    """The report has something to say about descriptions: a codebook, or a
    description in some group × stage (a report from before them has neither)."""
    return bool(report.get("codebook")) or any(
        (entry.get("n") or 0) > 0 for _, _, entry in description_cells(report)
    )


def _code_measures(report: dict, *path: str) -> list[Measure]:
    return [
        Measure("code_share", label, "code_share", at(*path, slug), digits=2, facet=("code", slug))
        for slug, label in codebook_labels(report)
    ]


def descriptions_table(report: dict) -> Table:
    """The first table of the dashboard's descriptions section."""
    table = build_table(
        slug="descriptions",
        caption="Descriptions and their codes per group and stage",
        keys=[GROUP, STAGE],
        measures=[
            Measure("n", "Descriptions", "descriptions_n", at("n"), "count"),
            Measure(
                "n_incoherent",
                "No answers",
                "descriptions_n_incoherent",
                at("n_incoherent"),
                "count",
            ),
            Measure("coverage", "Coverage", "descriptions_coverage", at("coverage"), digits=2),
            Measure("n_coded", "Coded", "descriptions_n_coded", at("n_coded"), "count"),
            Measure(
                "n_uninformative",
                "Uninformative",
                "descriptions_n_uninformative",
                at("n_uninformative"),
                "count",
            ),
            *_code_measures(report, "codes"),
        ],
        entries=(((group, stage), entry) for group, stage, entry in description_cells(report)),
        note="Code shares are over the primary coder's informative codings; a description "
        "may carry several codes, so they can sum above 1.",
        empty="No group and stage analysed yet.",
    )
    table.extra.update(section=SECTION, intro=SECTION_INTRO)
    return table


def _sources(entry: dict) -> list[str]:
    shares = entry.get("codes_by_source") or {}
    return sorted(shares, key=lambda s: (s != "Human", str(s).casefold()))


def description_codes_table(report: dict) -> Table:
    entries = [
        ((group, stage, source), (entry.get("codes_by_source") or {}).get(source) or {})
        for group, stage, entry in description_cells(report)
        for source in _sources(entry)
    ]
    return build_table(
        slug="description-codes",
        caption="Codes of the descriptions per source",
        keys=[GROUP, STAGE, Key("Source", ("source",))],
        measures=_code_measures(report),
        entries=entries,
        note="Share of the source's informatively coded descriptions that carry each code.",
        empty="No group and stage analysed yet.",
    )


def coder_agreement_table(report: dict) -> Table:
    labels = dict(codebook_labels(report))
    entries = [
        (
            (group, stage, slug),
            {
                "kappa": (entry.get("coder_agreement") or {}).get(slug),
                "n": entry.get("n_both_coded"),
            },
        )
        for group, stage, entry in description_cells(report)
        for slug in labels
    ]
    return build_table(
        slug="coder-agreement",
        caption="Coder agreement per code (Cohen's kappa)",
        keys=[GROUP, STAGE, Key("Code", ("code",), show=lambda slug: labels.get(slug, slug))],
        measures=[
            Measure(
                "coder_kappa",
                "Cohen's kappa",
                "coder_kappa",
                at("kappa"),
                banded=True,
            ),
            Measure("n_both_coded", "Both coded", "n_both_coded", at("n"), "count"),
        ],
        entries=entries,
        note="The primary coder against the second coder, on the descriptions both coded: "
        "the code present or absent.",
        empty="The study has no codebook yet.",
    )


def description_tables(report: dict) -> list[Table]:
    """The description tables in reading order; none when the report has nothing on
    descriptions."""
    if not has_descriptions(report):
        return []
    return [
        descriptions_table(report),
        description_codes_table(report),
        coder_agreement_table(report),
    ]
