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
    Batch,
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

from .metrics.bootstrap import DEFAULT_LEVEL
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
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"),
    (100_000_000_000, "10B<n<100B"),
    (1_000_000_000_000, "100B<n<1T"),
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
    return "n>1T"


def _yaml_text(value: str) -> str:
    """A YAML double-quoted scalar: JSON's quoted string with every character outside
    ASCII escaped is valid YAML (control characters included)."""
    return json.dumps(value, ensure_ascii=True)


def _inline(text) -> str:
    """A text on one line of Markdown (a table cell, a list item)."""
    return " ".join(str(text).split())


def _cell(text) -> str:
    return _inline(text).replace("\\", "\\\\").replace("|", "\\|")


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


_BATCH = {
    Stage.Instrument.COHERENCE: "a batch is one dialogue context and its candidates, "
    "shuffled, each judged coherent or not",
    Stage.Instrument.LIKERT: "a batch is one dialogue context and its candidates, shuffled, "
    "each rated on the stage's dimensions",
    Stage.Instrument.PAIRWISE: "a batch is one dialogue context and pairs of its "
    "candidates, each pair answered with the better one or a tie",
    Stage.Instrument.RANKING: "a batch is one dialogue context and its candidates, ranked "
    "from best to worst",
}


def _protocol(study: Study) -> list[str]:
    categories = list(ErrorCategory.objects.filter(study=study).order_by("order", "bit"))
    groups = {g.pk: g.name for g in study.groups.all()}
    checked = dict(
        Batch.objects.filter(stage__study=study)
        .values("stage_id")
        .annotate(
            n=Count(
                "pk",
                filter=Q(items__reflection__kind=Reflection.Kind.ATTENTION_CHECK),
                distinct=True,
            )
        )
        .values_list("stage_id", "n")
    )
    totals = dict(
        Batch.objects.filter(stage__study=study)
        .values("stage_id")
        .annotate(n=Count("pk"))
        .values_list("stage_id", "n")
    )
    scale = study.empathy_scale
    lines = []
    stages = study.stages.order_by("position").prefetch_related(
        "groups", "categories", "group_waits"
    )
    for stage in stages:
        chosen = {g.pk for g in stage.groups.all()}
        taking_part = [pk for pk in sorted(groups, key=groups.get) if group_takes_part(chosen, pk)]
        waits = {w.group_id: w.min_wait for w in stage.group_waits.all()}
        wait = "; ".join(
            f"{groups[pk]} {duration_format(stage_wait(stage.min_wait, waits, pk))}"
            for pk in taking_part
        )
        lines.append(
            f"{stage.position}. **{_inline(stage.name)}** ({stage.get_instrument_display()}): "
            f"{_BATCH[stage.instrument]}; {stage.k} annotators of each group take each "
            f"batch; groups: {', '.join(groups[pk] for pk in taking_part)}; wait before the "
            f"stage: {wait}; {checked.get(stage.pk, 0)} of its {totals.get(stage.pk, 0)} "
            "batches hold a hidden attention check."
        )
        lines.append(f"   Question: \u201c{_inline(stage.wording.question)}\u201d")
        if stage.instrument != Stage.Instrument.COHERENCE:
            continue
        offered = stage_offered_categories(categories, {c.pk for c in stage.categories.all()})
        names = ", ".join(f"`{c.slug}` ({_inline(c.label)})" for c in offered)
        lines.append(f"   After No: {stage.get_no_answer_display().lower()}; categories: {names}.")
        if stage.empathy_after_yes:
            points = ", ".join(f"{n} = {_inline(label)}" for n, label in scale.items() if label)
            lines.append(f"   After Yes: an empathy rating from 1 to {len(scale)} ({points}).")
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
    if not rows:
        return [
            "The newest analysis run has no agreement on the coherence question: the study "
            "has no coherence stages, or none with items judged by two or more annotators. "
            "The dashboard gives the other instruments' agreement."
        ]
    parameters = run.parameters or {}
    finished = timezone.localtime(run.finished_at).date().isoformat()
    excluded = parameters.get("excluded_sources") or []
    scope = "the judgements of submitted batches"
    if parameters.get("include_expired"):
        scope += " and of batches that expired before submission"
    if excluded:
        scope += f", leaving out the sources {', '.join(excluded)}"
    intervals = (
        f" ({round(DEFAULT_LEVEL * 100)}% bootstrap intervals in brackets)"
        if parameters.get("bootstrap_resamples", 1)
        else ""
    )
    lines = [
        f"On the coherence question (Yes or No), from analysis run {run.pk} of {finished}, "
        f"over {scope}{intervals}. The kappas read the items with the stage's usual number "
        "of raters (*items for κ*); the majority agreement ratios are those of the items "
        "the majority judged coherent / incoherent.",
        "",
    ]
    return lines + _table(
        [
            "group",
            "stage",
            "items for κ",
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
        *(f"- {_yaml_text(code)}" for code in study.data_language_list),
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
        study.data_description.strip()
        or "(Describe the dataset here: set the study's description of the published data.)",
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
        "Kinds: `boolean` is true for Yes, false for No and null when empty (a category "
        "column is true where the annotator ticked the category, null where not); "
        "`integer`, `number` and `timestamp` (UTC) are null when empty; `string` is the "
        "text exactly as written. `dialogue_context` holds the dialogue as JSON text: a "
        "list of turns, each one key (the speaker) with the turn's text.",
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
        "## Licence",
        "",
        f"{study.get_data_license_display() if study.data_license else 'Not chosen yet'}.",
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
