"""Signals of the studies app, for the apps above it (which studies never imports).

``materials_written``: a study's materials changed through an import (materials, a
candidate pool, or published annotations), sent once the import has committed, with
``study_id``. The analysis app computes what it derives from the texts ahead of a
report (the candidates' embeddings) on it."""

from django.dispatch import Signal

materials_written = Signal()
