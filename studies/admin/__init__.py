"""The researchers' workspace: configure studies, import materials, invite annotators,
watch and correct the work.

Admin forms validate with the models' own constraints (Django runs
``Model.validate_constraints`` in ``full_clean``) and refuse changes that would alter
data already annotated; writes with rules go through ``studies.services``.
"""

from . import (  # noqa: F401  (registers the model admins)
    coding,
    configuration,
    materials,
    people,
    questionnaires,
    study,
)
