"""A run's parameters: which judgements count (excluded sources, expired batches), the
bootstrap, and the quality thresholds; their defaults and the one check every run,
export and form goes through."""

import math

from django.core.exceptions import ValidationError

from studies.models import Study
from studies.selectors import study_analysed_sources, study_generation_keys

from .metrics.protocol.quality import DEFAULT_AGREEMENT_FLOOR, DEFAULT_FAST_SECONDS

#: More resamples than this would hold a worker for long without making the 95%
#: intervals noticeably better; the dashboard form and the API say the same.
MAX_BOOTSTRAP_RESAMPLES = 10_000

DEFAULT_PARAMETERS = {
    "excluded_sources": [],
    "include_expired": False,
    "bootstrap_resamples": 1000,
    "seed": 0,
    "fast_seconds": DEFAULT_FAST_SECONDS,
    "agreement_floor": DEFAULT_AGREEMENT_FLOOR,
    # Generation settings (keys of the reflections' metadata) to cross: the label
    # distribution per combination of their values.
    "crossed_settings": [],
}
#: Crossing more settings than this splits the items too thinly to read.
MAX_CROSSED_SETTINGS = 4


def analysis_parameters_clean(parameters: dict | None, *, study: Study | None = None) -> dict:
    """Fill defaults and reject unknown or ill-typed parameters; with ``study``, also
    an excluded source that is not one of the study's (runs and exports alike)."""
    parameters = dict(parameters or {})
    unknown = sorted(set(parameters) - DEFAULT_PARAMETERS.keys())
    if unknown:
        raise ValidationError({"parameters": f"Unknown parameters: {', '.join(unknown)}."})
    cleaned = {**DEFAULT_PARAMETERS, **parameters}
    sources = cleaned["excluded_sources"]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise ValidationError({"excluded_sources": "Give a list of source names."})
    if not isinstance(cleaned["include_expired"], bool):
        raise ValidationError({"include_expired": "Must be true or false."})
    for key in ("bootstrap_resamples", "seed"):
        if not isinstance(cleaned[key], int) or isinstance(cleaned[key], bool) or cleaned[key] < 0:
            raise ValidationError({key: "Must be a whole number, 0 or more."})
    for key in ("fast_seconds", "agreement_floor"):
        value = cleaned[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError({key: "Must be a number, 0 or more."})
        if not math.isfinite(value) or value < 0:
            raise ValidationError({key: "Must be a number, 0 or more."})
        cleaned[key] = float(value)
    if cleaned["agreement_floor"] > 1:
        raise ValidationError({"agreement_floor": "Must be between 0 and 1."})
    if cleaned["bootstrap_resamples"] > MAX_BOOTSTRAP_RESAMPLES:
        raise ValidationError(
            {"bootstrap_resamples": f"At most {MAX_BOOTSTRAP_RESAMPLES:,} resamples."}
        )
    cleaned["excluded_sources"] = sorted(set(sources))
    crossed = cleaned["crossed_settings"]
    if not isinstance(crossed, list) or not all(isinstance(k, str) and k for k in crossed):
        raise ValidationError({"crossed_settings": "Give a list of generation setting names."})
    if len(set(crossed)) != len(crossed):
        raise ValidationError({"crossed_settings": "Name each setting once."})
    if len(crossed) > MAX_CROSSED_SETTINGS:
        raise ValidationError(
            {"crossed_settings": f"Cross at most {MAX_CROSSED_SETTINGS} settings."}
        )
    if study is not None and crossed:
        carried = study_generation_keys(study=study)
        unknown = [key for key in crossed if key not in carried]
        if unknown:
            raise ValidationError(
                {
                    "crossed_settings": f"Not a generation setting of this study's "
                    f"reflections: {', '.join(unknown)} (they carry: "
                    f"{', '.join(carried) or 'none'})."
                }
            )
    if study is not None:
        known = study_analysed_sources(study=study)
        unknown = [name for name in cleaned["excluded_sources"] if name not in known]
        if unknown:
            raise ValidationError(
                {
                    "excluded_sources": f"Not a source of this study: {', '.join(unknown)} "
                    f"(it has: {', '.join(known) or 'none'})."
                }
            )
    return cleaned
