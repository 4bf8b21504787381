"""The label-distribution bars' percent labels add up to 100 (largest remainder)."""

import copy
import re
from fractions import Fraction

import pytest

from analysis.plots import label_distribution_svg
from analysis.plots.svg import percents_summing_to_100
from tests.analysis.test_dashboard import SVG, build_report, judgement_frame, parse


def test_three_equal_shares_are_34_33_33_not_33_33_33():
    # 33.33… each: rounded down 33 + 33 + 33 = 99; the one unit left goes to the first
    # of the equal remainders.
    assert percents_summing_to_100([1 / 3, 1 / 3, 1 / 3]) == ["34%", "33%", "33%"]


def test_the_unit_left_over_goes_to_the_largest_remainder():
    # 12.5, 37.4, 50.1 → floors 12, 37, 50 (99); remainders .5, .4, .1: the 12 gets it.
    assert percents_summing_to_100([0.125, 0.374, 0.501]) == ["13%", "37%", "50%"]
    # Plain rounding of 14.5, 14.5, 71 gives 15 + 15 + 71 = 101 (or 14 + 14 + 71 = 99
    # with banker's rounding); floors 14, 14, 71 leave one unit for the first .5.
    assert percents_summing_to_100([0.145, 0.145, 0.71]) == ["15%", "14%", "71%"]


def test_one_decimal_labels_sum_to_100_point_0():
    assert percents_summing_to_100([1 / 3, 1 / 3, 1 / 3], digits=1) == ["33.4%", "33.3%", "33.3%"]
    assert percents_summing_to_100([0.0, 1.0]) == ["0%", "100%"]


@pytest.mark.parametrize("n", [3, 6, 7, 9, 11])
def test_any_split_of_n_judgements_sums_to_100(n):
    for a in range(n + 1):
        for b in range(n + 1 - a):
            shares = [a / n, b / n, (n - a - b) / n]
            labels = percents_summing_to_100(shares)
            assert sum(int(label[:-1]) for label in labels) == 100
            for label, share in zip(labels, shares, strict=True):
                assert abs(int(label[:-1]) - 100 * share) < 1


def test_the_figures_bars_show_labels_that_add_up_to_100():
    report = copy.deepcopy(build_report(judgement_frame()))
    third = float(Fraction(1, 3))
    for group in report["groups"].values():
        for cell in group["stages"].values():
            for row in cell["label_distribution"]:
                cell["label_distribution"][row] = {
                    "coherent": third,
                    "malformed": third,
                    "off_topic": third,
                    "incoherent_unspecified": 0.0,
                }
    root = parse(label_distribution_svg(report))
    shown = [
        t.text
        for t in root.iter(f"{SVG}text")
        if t.get("pointer-events") == "none" and re.fullmatch(r"\d+%", t.text or "")
    ]
    assert shown and len(shown) % 3 == 0
    for i in range(0, len(shown), 3):
        assert shown[i : i + 3] == ["34%", "33%", "33%"]
    tips = [t.text for t in root.iter(f"{SVG}title") if t.text and t.text.endswith("%")]
    assert tips and all(re.search(r" 33\.[34]%$", tip) for tip in tips)
