"""The report of an analysis run: built from the judgements frame, stored as JSON, and
rendered from the stored JSON.

* :mod:`.build`: the JSON report of a study (the contract other tools read), with its
  blocks in :mod:`.descriptions` (free text and its coding), :mod:`.questionnaires`,
  :mod:`.systems` (system-level comparisons) and :mod:`.quality` (per-annotator
  quality, also an export column);
* :mod:`.tidy_csv`: each table of :mod:`analysis.tables` as tidy CSV;
* :mod:`.text`: the report as plain text for the terminal.

Pure functions of DataFrames and stored reports: nothing here reads the database
(:mod:`analysis.selectors` does) and the statistics live in :mod:`analysis.metrics`.
"""
