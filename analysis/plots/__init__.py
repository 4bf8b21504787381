"""The report's figures as SVG (pure functions of the report dict)."""

from .descriptions import description_codes_svg
from .figures import PLOTS as _FIGURES
from .figures import agreement_svg, annotator_consistency_svg, label_distribution_svg
from .likert import likert_svg
from .over_time import agreement_over_time_svg
from .preferences import pairwise_strengths_svg, pairwise_wins_svg
from .settings import generation_crossed_svg, generation_mee_svg, order_positions_svg
from .svg import OKABE_ITO
from .systems import systems_svg

#: Every figure of the dashboard by name (the SVG endpoint's ``plot``).
PLOTS = {
    **_FIGURES,
    "agreement-over-time": agreement_over_time_svg,
    "systems": systems_svg,
    "description-codes": description_codes_svg,
    "likert": likert_svg,
    "pairwise-wins": pairwise_wins_svg,
    "pairwise-strengths": pairwise_strengths_svg,
    "generation-mee": generation_mee_svg,
    "generation-crossed": generation_crossed_svg,
    "order-positions": order_positions_svg,
}

__all__ = [
    "OKABE_ITO",
    "PLOTS",
    "agreement_over_time_svg",
    "agreement_svg",
    "annotator_consistency_svg",
    "description_codes_svg",
    "generation_crossed_svg",
    "generation_mee_svg",
    "label_distribution_svg",
    "likert_svg",
    "order_positions_svg",
    "pairwise_strengths_svg",
    "pairwise_wins_svg",
    "systems_svg",
]
