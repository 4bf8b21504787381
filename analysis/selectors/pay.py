"""What each group is paid for each stage (``StagePay``), as the report's pay block
reads it: one query."""

import pandas as pd

from studies.models import StagePay

PAY_COLUMNS = ["group", "stage", "unit", "amount", "currency", "minimum_hourly_rate"]


def pay_rates(*, study_id: int) -> pd.DataFrame:
    """One row per (group, stage) with pay; amounts as floats (the report's numbers)."""
    rows = StagePay.objects.filter(stage__study_id=study_id).values_list(
        "group__name", "stage__name", "unit", "amount", "currency", "minimum_hourly_rate"
    )
    frame = pd.DataFrame.from_records(list(rows), columns=PAY_COLUMNS)
    for column in ("amount", "minimum_hourly_rate"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame
