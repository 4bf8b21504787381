"""The report's figures as SVG (pure functions of the report dict)."""

from .figures import PLOTS, agreement_svg, annotator_consistency_svg, label_distribution_svg
from .svg import OKABE_ITO

__all__ = [
    "OKABE_ITO",
    "PLOTS",
    "agreement_svg",
    "annotator_consistency_svg",
    "label_distribution_svg",
]
