"""The explanations quote the thresholds and the scale the code uses, not copies."""

from analysis.explanations import EXPLANATIONS, UNDEFINED
from analysis.metrics.agreement import MIN_MAJORITY_RATERS
from analysis.metrics.protocol.evaluators import MIN_SCORED_ITEMS
from analysis.metrics.protocol.generation import MIN_SETTING_ITEMS
from analysis.metrics.protocol.systems import SIGNIFICANCE
from analysis.tables import generation as generation_tables
from analysis.tables import systems as system_tables
from studies.protocol import EMPATHY_SCALE


def test_the_empathy_scale_is_named_as_annotators_see_it():
    text = EXPLANATIONS["empathy_share"]
    assert f"1 {EMPATHY_SCALE[1]} … 5 {EMPATHY_SCALE[5]}" in text
    assert "strongly" not in text


def test_thresholds_are_quoted_from_their_constants():
    assert f"below {SIGNIFICANCE}" in EXPLANATIONS["holm_significant"]
    assert f"at least {MIN_MAJORITY_RATERS} annotators" in EXPLANATIONS["majority_agreement"]
    assert f"at least {MIN_MAJORITY_RATERS} annotators" in EXPLANATIONS["n_items_flagged"]
    assert f"at least {MIN_MAJORITY_RATERS} annotators" in UNDEFINED["majority_agreement"]
    assert f"{MIN_MAJORITY_RATERS} or more" in UNDEFINED["majority_coherent_rate"]
    assert f"{MIN_SETTING_ITEMS} items" in generation_tables.NO_SETTINGS
    table = system_tables.evaluator_source_table({})
    assert f"{MIN_SCORED_ITEMS} scored items" in table.note


def test_no_table_says_scores_can_only_be_imported():
    table = system_tables.evaluator_systems_table({})
    assert "compute" in table.empty and "imported." not in table.empty
