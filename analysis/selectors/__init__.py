"""The analysis's reads: where ORM rows become DataFrames (one query each, no per-row
Python). :mod:`.judgements` reads the judgements, assignments, categories, codings,
automatic scores and runs; :mod:`.questionnaires` the questionnaire answers."""
