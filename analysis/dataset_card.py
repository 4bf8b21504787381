"""The dataset card of a study: a README in the format dataset hubs read (a YAML header
with the licence, languages, size and data files, then Markdown), generated from the
study as it stands, to publish beside its data files (``dataset_files``: the published
format, extended, as Parquet, one file per instrument).

It says what the files hold, who annotated and how they were recruited and paid, the
protocol of each stage, and the agreement of each group and stage from the newest
finished analysis run. Annotators appear by pseudonym only, as in the exports; no
e-mail address, platform id or code is in it.

https://huggingface.co/docs/hub/datasets-cards
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from studies.datafiles.typed import column_kinds
from studies.durations import duration_format
from studies.exports import (
    ExportOptions,
    export_column_kinds,
    export_filename,
    export_header,
    export_instruments,
    export_row_count,
    export_zip_write,
)
from studies.exports.comparisons import pairwise_export_header, ranking_export_header
from studies.exports.likert import likert_export_header
from studies.models import (
    Annotator,
    Assignment,
    ErrorCategory,
    Questionnaire,
    Reflection,
    Stage,
    StagePay,
    Study,
    TrainingItem,
)
from studies.models.categories import stage_offered_categories
from studies.protocol import group_takes_part, stage_wait

from .models import AnalysisRun

#: The published files of a dataset: the published format with its optional columns.
DATASET_OPTIONS = ExportOptions(extended=True, file="parquet")
#: The size bands dataset hubs sort by (rows of the data files together).
SIZE_BANDS = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
)
_HEADERS = {
    Stage.Instrument.LIKERT: likert_export_header,
    Stage.Instrument.PAIRWISE: pairwise_export_header,
    Stage.Instrument.RANKING: ranking_export_header,
}


@dataclass(frozen=True)
class DatasetFile:
    name: str
    instrument: str
    n_rows: int
    columns: list[tuple[str, str]]


def dataset_files(study: Study) -> list[DatasetFile]:
    """The data files the card describes: one per instrument of the study's stages."""
    files = []
    for instrument in export_instruments(study=study, options=DATASET_OPTIONS):
        header_of = _HEADERS.get(instrument, export_header)
        header = header_of(study=study, options=DATASET_OPTIONS)
        kinds = export_column_kinds(study=study, options=DATASET_OPTIONS, instrument=instrument)
        files.append(
            DatasetFile(
                name=export_filename(study=study, options=DATASET_OPTIONS, instrument=instrument),
                instrument=instrument,
                n_rows=export_row_count(
                    study=study, options=DATASET_OPTIONS, instrument=instrument
                ),
                columns=list(zip(header, column_kinds(header, kinds), strict=True)),
            )
        )
    return files


def size_band(n_rows: int) -> str:
    for limit, band in SIZE_BANDS:
        if n_rows < limit:
            return band
    return "n>10M"


def _yaml_text(value: str) -> str:
    """A YAML scalar: JSON's quoted string is valid YAML."""
    return json.dumps(value, ensure_ascii=False)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _ci(value, ci) -> str:
    if value is None:
        return "–"
    text = f"{value:.3f}"
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def _recruitment(study: Study) -> list[list]:
    """Per group: the annotators whose work counts, by how they came."""
    counted = Assignment.counted_statuses()
    rows = (
        Annotator.objects.filter(study=study, assignments__status__in=counted)
        .values("group__name", "platform")
        .annotate(n=Count("pk", distinct=True))
        .order_by("group__name", "platform")
    )
    labels = dict(Annotator.Platform.choices)
    by_group: dict[str, list[str]] = {}
    totals: dict[str, int] = {}
    for row in rows:
        group = row["group__name"]
        by_group.setdefault(group, []).append(f"{labels[row['platform']]}: {row['n']}")
        totals[group] = totals.get(group, 0) + row["n"]
    return [[group, totals[group], "; ".join(ways)] for group, ways in by_group.items()]


def _protocol(study: Study) -> list[str]:
    categories = list(ErrorCategory.objects.filter(study=study).order_by("order", "bit"))
    groups = {g.pk: g.name for g in study.groups.all()}
    lines = []
    stages = study.stages.order_by("position").prefetch_related("groups", "categories")
    for stage in stages:
        chosen = {g.pk for g in stage.groups.all()}
        taking_part = [name for pk, name in groups.items() if group_takes_part(chosen, pk)]
        waits = {w.group_id: w.min_wait for w in stage.group_waits.all()}
        wait = "; ".join(
            f"{groups[pk]} {duration_format(stage_wait(stage.min_wait, waits, pk))}"
            for pk in sorted(groups, key=groups.get)
            if group_takes_part(chosen, pk)
        )
        lines.append(
            f"{stage.position}. **{stage.name}** ({stage.get_instrument_display()}): "
            f"{stage.k} annotators of each group judge each batch (one dialogue context "
            f"and its candidates, shuffled, with one hidden attention check); groups: "
            f"{', '.join(taking_part)}; wait before the stage: {wait}."
        )
        lines.append(f"   Question: \u201c{stage.wording.question}\u201d")
        if stage.instrument == Stage.Instrument.COHERENCE:
            offered = stage_offered_categories(categories, {c.pk for c in stage.categories.all()})
            names = ", ".join(f"`{c.slug}` ({c.label})" for c in offered)
            lines.append(
                f"   After No: {stage.get_no_answer_display().lower()}; categories: {names}."
            )
    scale = study.empathy_scale
    if scale:
        points = ", ".join(f"{n} = {label}" for n, label in scale.items() if label)
        lines += ["", f"After Yes, annotators rate empathy on 1–{len(scale)} ({points})."]
    screening = Questionnaire.objects.filter(
        study=study, placement=Questionnaire.Placement.SCREENING
    ).exists()
    quiz = TrainingItem.objects.filter(study=study).exists()
    before = [
        "a screening questionnaire" if screening else "",
        "a training quiz of practice items" if quiz else "",
    ]
    before = [b for b in before if b]
    if before:
        lines += ["", f"Before annotating, annotators took {' and '.join(before)}."]
    return lines


def _pay(study: Study, report: dict | None) -> list[str]:
    pay = StagePay.objects.filter(stage__study=study).select_related("stage", "group")
    if not pay:
        return ["No pay was recorded for this study."]
    rows = [
        [
            p.stage.name,
            p.group.name,
            f"{p.amount} {p.currency} {p.get_unit_display()}",
            f"{p.minimum_hourly_rate} {p.currency}" if p.minimum_hourly_rate else "–",
        ]
        for p in pay.order_by("stage__position", "group__name")
    ]
    lines = _table(["stage", "group", "pay", "least hourly rate aimed at"], rows)
    earned = ((report or {}).get("pay") or {}).get("cells") or []
    rates = [
        [c["stage"], c["group"], f"{c['hourly_rate']['median']:.2f} {c['currency']}"]
        for c in earned
        if (c.get("hourly_rate") or {}).get("median") is not None
    ]
    if rates:
        lines += ["", "Median hourly rate earned (claim to submission of each batch):", ""]
        lines += _table(["stage", "group", "median hourly rate"], rates)
    return lines


def _agreement(report: dict | None, run: AnalysisRun | None) -> list[str]:
    if report is None:
        return [
            "No analysis has been run yet: run one on the study's dashboard and download "
            "the card again to add the agreement figures."
        ]
    rows = []
    for group in report.get("group_order", []):
        stages = report["groups"].get(group, {}).get("stages", {})
        for stage in report.get("stage_order", []):
            block = stages.get(stage)
            if not block or not block.get("coherence"):
                continue
            c = block["coherence"]
            majority = c.get("majority_agreement") or {}
            rows.append(
                [
                    group,
                    stage,
                    block.get("n_items"),
                    block.get("raters_per_item"),
                    _ci(c.get("fleiss_kappa"), c.get("fleiss_kappa_ci")),
                    _ci(c.get("randolph_kappa"), c.get("randolph_kappa_ci")),
                    _ci(c.get("krippendorff_alpha"), c.get("krippendorff_alpha_ci")),
                    " / ".join(_ci(majority.get(k), None) for k in ("coherent", "incoherent")),
                ]
            )
    finished = timezone.localtime(run.finished_at).date().isoformat()
    lines = [
        f"On the coherence question (Yes or No), from analysis run {run.pk} of {finished} "
        "(95% bootstrap intervals in brackets; the majority agreement ratios for the items "
        "judged coherent / incoherent by the majority):",
        "",
    ]
    if not rows:
        return [*lines, "The run found no items judged by two or more annotators."]
    return lines + _table(
        [
            "group",
            "stage",
            "items",
            "raters per item",
            "Fleiss' κ",
            "Randolph's κ",
            "Krippendorff's α",
            "majority agreement",
        ],
        rows,
    )


def _latest_run(study: Study) -> AnalysisRun | None:
    return (
        AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE)
        .order_by("-created_at", "-pk")
        .first()
    )


def dataset_card(study: Study) -> str:
    """The card's text (Markdown with its YAML header)."""
    files = dataset_files(study)
    n_rows = sum(f.n_rows for f in files)
    crowd = Annotator.objects.filter(study=study).exclude(platform="").exists()
    run = _latest_run(study)
    report = run.result if run is not None else None
    reflections = Reflection.objects.filter(context__study=study).exclude(
        kind=Reflection.Kind.ATTENTION_CHECK
    )
    counts = reflections.aggregate(
        human=Count("pk", filter=Q(kind=Reflection.Kind.HUMAN)),
        synthetic=Count("pk", filter=Q(kind=Reflection.Kind.SYNTHETIC)),
        contexts=Count("context", distinct=True),
    )
    sources = ", ".join(
        f"{row['source']} ({row['n']})"
        for row in reflections.values("source").annotate(n=Count("pk")).order_by("source")
    )
    header = [
        "---",
        f"pretty_name: {_yaml_text(study.title)}",
        f"license: {study.data_license or 'unknown'}",
        "language:",
        *(f"- {code}" for code in study.data_language_list),
        "size_categories:",
        f"- {size_band(n_rows)}",
        "task_categories:",
        "- text-classification",
        "annotations_creators:",
        f"- {'crowdsourced' if crowd else 'other'}",
        "tags:",
        "- human-evaluation",
        "- counselling",
        "- reflections",
        "- coherence",
        "configs:",
        *(
            line
            for f in files
            for line in (
                f"- config_name: {f.instrument}",
                "  data_files:",
                "  - split: train",
                f"    path: {f.name}",
            )
        ),
        "---",
    ]
    body = [
        "",
        f"# {study.title}",
        "",
        study.description.strip() or "(The study has no description yet.)",
        "",
        "## The data",
        "",
        f"Human evaluation of counselling reflections: annotators judged responses to "
        f"{counts['contexts']} dialogue contexts, {counts['human']} written by therapists "
        f"and {counts['synthetic']} generated by models (by source: {sources}). "
        f"{n_rows} rows in all, the answers of submitted batches only, attention checks "
        "left out. Generated on "
        f"{timezone.localdate().isoformat()} from the study `{study.slug}`.",
        "",
    ]
    for f in files:
        body += [f"### `{f.name}` ({f.n_rows} rows)", ""]
        body += _table(["column", "kind"], [[f"`{n}`", k] for n, k in f.columns])
        body += [""]
    body += [
        "Kinds: `boolean` is true for Yes, false for No and null when empty; `integer`, "
        "`number` and `timestamp` (UTC) are null when empty; `string` is the text exactly "
        "as written. `dialogue_context` holds the dialogue as JSON text: a list of turns, "
        "each one key (the speaker) with the turn's text.",
        "",
        "## Who annotated",
        "",
        *_table(["group", "annotators", "recruited through"], _recruitment(study)),
        "",
        "Annotators appear by pseudonym only (for example `Layperson 3`); the files hold no "
        "names, e-mail addresses or crowd platform ids.",
        "",
        "## Pay",
        "",
        *_pay(study, report),
        "",
        "## Protocol",
        "",
        *_protocol(study),
        "",
        "## Agreement",
        "",
        *_agreement(report, run),
        "",
        "## Licence and contact",
        "",
        f"Licence: {study.get_data_license_display() if study.data_license else 'not chosen yet'}."
        + (f" Contact: {study.contact_email}." if study.contact_email else ""),
        "",
    ]
    return "\n".join(header + body)


def dataset_zip_write(*, study: Study, target) -> None:
    """The dataset as a zip to ``target`` (a path or a binary file): ``README.md`` (the
    card), then its data files (``dataset_files``)."""
    export_zip_write(
        study=study,
        options=DATASET_OPTIONS,
        target=target,
        texts={"README.md": dataset_card(study)},
    )


def dataset_zip_filename(study: Study) -> str:
    return f"{study.slug}-dataset.zip"
