"""Rows of text as an Excel workbook (.xlsx), for people who open exports in a
spreadsheet.

Every cell is written with ``write_string``: a text that starts with ``=`` stays that
text and is never evaluated, so no apostrophe is needed (unlike the spreadsheet-safe
CSV, :mod:`.spreadsheet`). The workbook is written in XlsxWriter's constant-memory
mode: each row goes to a temporary file as soon as the next one starts, so memory
stays flat however many rows there are. The finished file is written to ``target``
(a path or a binary file object); a response streams it from there.

Excel has limits a CSV does not: at most 1,048,576 rows and 32,767 characters per
cell. A larger export is refused with :class:`ExcelLimitError` rather than truncated,
since a silently shortened text is worse than none.

https://xlsxwriter.readthedocs.io/working_with_memory.html
"""

from collections.abc import Iterable

import xlsxwriter

MAX_ROWS = 1_048_576
MAX_CELL_CHARACTERS = 32_767
CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


class ExcelLimitError(ValueError):
    """The rows do not fit in an Excel worksheet; the message says where and why."""


def xlsx_write(*, rows: Iterable[list[str]], target, sheet_name: str = "Sheet1") -> int:
    """Write ``rows`` (the first one is the header) to ``target``; returns the number
    of rows written. Raises ExcelLimitError on the first row or cell Excel cannot hold."""
    workbook = xlsxwriter.Workbook(
        target,
        {
            "constant_memory": True,
            # write_string is used for every cell; these keep any later write() honest.
            "strings_to_numbers": False,
            "strings_to_formulas": False,
            "strings_to_urls": False,
        },
    )
    try:
        sheet = workbook.add_worksheet(sheet_name)
        sheet.freeze_panes(1, 0)  # the header stays in view
        header: list[str] = []
        count = 0
        for count, cells in enumerate(rows, start=1):
            if count > MAX_ROWS:
                raise ExcelLimitError(
                    f"more than {MAX_ROWS:,} rows: an Excel worksheet holds at most "
                    f"{MAX_ROWS:,} (the header included); download the CSV instead"
                )
            if count == 1:
                header = list(cells)
            for column, value in enumerate(cells):
                if len(value) > MAX_CELL_CHARACTERS:
                    name = header[column] if column < len(header) else f"column {column + 1}"
                    raise ExcelLimitError(
                        f"row {count}, column '{name}': {len(value):,} characters, but an Excel "
                        f"cell holds at most {MAX_CELL_CHARACTERS:,}; download the CSV instead"
                    )
                if value:
                    sheet.write_string(count - 1, column, value)
    finally:
        workbook.close()
    return count
