"""What an export contains: its format, file kind and filters, checked from a form,
the API's query or the command's options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from ..models import Assignment, Reflection, Stage, Study

# "training": the training quiz's answers (studies.exports.training), not judgements.
FORMATS = ("published", "full", "training")
# The kinds of file, and how the admin page and the API describe them.
FILES = {
    "csv": "CSV, every text exactly as stored (for pandas, R and re-import)",
    "csv-spreadsheet-safe": (
        "CSV for a spreadsheet: a text starting with =, +, - or @ gets a leading apostrophe"
    ),
    "xlsx": "Excel workbook (.xlsx): every cell is text, nothing is evaluated",
    "jsonl": (
        "JSON Lines (.jsonl), for publishing: one object per row; numbers and Yes/No as "
        "JSON numbers and true/false, an empty number, Yes/No or time as null"
    ),
    "parquet": (
        "Apache Parquet (.parquet), for publishing: typed columns (numbers, true/false, "
        "UTC times), read by pandas, R's arrow and dataset hubs"
    ),
}


@dataclass(frozen=True)
class ExportOptions:
    """What to export. Default: every stage, group and source, judgements of submitted
    assignments only (as analysed), attention-check items only in the full format.
    ``extended`` adds the optional columns of the published format (group, most
    evident error, empathy) so that an import reproduces every answer. ``file`` is
    one of ``FILES`` (see the module docstring)."""

    fmt: str = "published"
    stages: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    include_expired: bool = False
    include_rejected: bool = False
    extended: bool = False
    file: str = "csv"
    statuses: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self):
        statuses = Assignment.counted_statuses(
            include_expired=self.include_expired, include_rejected=self.include_rejected
        )
        object.__setattr__(self, "statuses", statuses)

    @property
    def spreadsheet_safe(self) -> bool:
        return self.file == "csv-spreadsheet-safe"


def export_instruments(*, study: Study, options: ExportOptions) -> list[str]:
    """The instruments an export has a file for, in the order of their first stage:
    the published format one per instrument of the stages it covers (a zip holds
    several); the full and training formats are the coherence protocol's."""
    if options.fmt != "published":
        return [Stage.Instrument.COHERENCE]
    stages = Stage.objects.filter(study=study)
    if options.stages:
        stages = stages.filter(name__in=options.stages)
    instruments = stages.order_by("position").values_list("instrument", flat=True)
    return list(dict.fromkeys(instruments)) or [Stage.Instrument.COHERENCE]


def file_clean(value: str | None) -> str:
    """One of ``FILES`` (empty: csv), as every download and command takes it."""
    file = (value or "csv").strip()
    if file not in FILES:
        *first, last = (f'"{name}"' for name in FILES)
        raise ValidationError(f'Choose {", ".join(first)} or {last}, not "{file}".')
    return file


def flag_clean(value) -> bool:
    """A yes/no option as a query string, a form or a command line gives it."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise ValidationError("Use true or false.")


def export_options_clean(*, study: Study, data: Mapping) -> ExportOptions:
    """Validate export parameters (from a query string, a form or a command line):
    ``format``, ``file`` (one of ``FILES``, default csv), ``stage`` / ``group`` /
    ``source`` (lists of names that must exist in the study), ``include_expired``,
    ``include_rejected``, ``extended``. Raises ``ValidationError`` with a message per
    field."""

    def values(key) -> tuple[str, ...]:
        raw = data.getlist(key) if hasattr(data, "getlist") else data.get(key, ())
        if isinstance(raw, str):
            raw = [raw]
        return tuple(dict.fromkeys(v.strip() for v in raw if v and v.strip()))

    errors: dict[str, str] = {}
    fmt = (data.get("format") or "published").strip() if hasattr(data, "get") else "published"
    if fmt not in FORMATS:
        errors["format"] = f'Choose "published", "full" or "training", not "{fmt}".'
    file = (data.get("file") or "csv").strip() if hasattr(data, "get") else "csv"
    try:
        file_clean(file)
    except ValidationError as exc:
        errors["file"] = exc.messages[0]
    known = {
        "stage": set(study.stages.values_list("name", flat=True)),
        "group": set(study.groups.values_list("name", flat=True)),
        "source": set(
            Reflection.objects.filter(context__study=study)
            .values_list("source", flat=True)
            .distinct()
        ),
    }
    chosen = {}
    for key, names in known.items():
        chosen[key] = values(key)
        unknown = [v for v in chosen[key] if v not in names]
        if unknown:
            errors[key] = f"Not a {key} of this study: {', '.join(unknown)}."
    flags = {}
    for key in ("include_expired", "include_rejected", "extended"):
        try:
            flags[key] = flag_clean(data.get(key, False))
        except ValidationError as exc:
            errors[key] = exc.messages[0]
    if errors:
        raise ValidationError(errors)
    return ExportOptions(
        fmt=fmt,
        file=file,
        stages=chosen["stage"],
        groups=chosen["group"],
        sources=chosen["source"],
        **flags,
    )
