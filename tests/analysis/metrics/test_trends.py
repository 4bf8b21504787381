"""Trends over a numeric generation setting: a hand-worked logistic regression whose
maximum-likelihood line is known exactly, cross-checked with statsmodels' GLM, and
Spearman's rho of the per-value rates."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from analysis import metrics
from analysis.metrics.protocol.generation import generation_values
from analysis.metrics.protocol.trends import numeric_settings, setting_trend, spearman_exact


def cell(groups: dict[float, list[list[bool]]]) -> pd.DataFrame:
    """value → per item, its judgements' coherent answers."""
    rows, item = [], 0
    for value, items in groups.items():
        for answers in items:
            item += 1
            rows += [(item, answer, value) for answer in answers]
    return pd.DataFrame(rows, columns=["item", "coherent", "number"])


# p 0.0: 2 of 6 coherent (log-odds −ln 2); 0.5: 2 of 4 (0); 1.0: 4 of 6 (+ln 2). The
# empirical log-odds lie on a line, so it is the maximum-likelihood fit: slope ln 2 ÷
# 0.5 = 2 ln 2 per unit of p, odds ratio 4.
HAND = {
    0.0: [[True, False], [True, False], [False, False]],
    0.5: [[True, False], [True, False]],
    1.0: [[True, True], [True, False], [True, False]],
}


def test_a_trend_whose_fit_is_known_exactly():
    trend = setting_trend(cell(HAND))
    assert (trend["n_judgements"], trend["n_items"], trend["n_values"]) == (16, 8, 3)
    assert trend["slope"] == pytest.approx(2 * math.log(2), abs=1e-6)
    assert trend["odds_ratio"] == pytest.approx(4.0, abs=1e-5)
    low, high = trend["slope_ci"]
    assert low < trend["slope"] < high
    assert 0 < trend["p_value"] < 1
    # Rates 1/3, 1/2, 2/3 rise with p: rho 1; exactly, 2 of the 6 orderings of three
    # rates are as far from 0 (rho 1 and −1): p = 1/3.
    assert trend["spearman"] == pytest.approx(1.0)
    assert trend["spearman_p"] == pytest.approx(1 / 3)


def test_spearmans_p_is_exact_for_few_values():
    # Four values: rho 0.8 for one adjacent swap; |rho| ≥ 0.8 for 8 of the 24 orderings.
    rho, p = spearman_exact(np.array([1.0, 2, 3, 4]), np.array([0.1, 0.3, 0.2, 0.4]))
    assert (rho, p) == (pytest.approx(0.8), pytest.approx(8 / 24))
    rho, p = spearman_exact(np.array([1.0, 2, 3, 4]), np.array([0.4, 0.3, 0.2, 0.1]))
    assert (rho, p) == (pytest.approx(-1.0), pytest.approx(2 / 24))
    # Many values: scipy's own p-value.
    x = np.arange(12.0)
    y = np.array([3, 1, 4, 1.5, 5, 9, 2, 6, 5.5, 3.5, 8, 9.7])
    from scipy import stats

    expected = stats.spearmanr(x, y)
    assert spearman_exact(x, y) == (
        pytest.approx(expected.statistic),
        pytest.approx(expected.pvalue),
    )
    assert spearman_exact(x[:3], np.ones(3)) == (None, None)


def test_the_fit_matches_statsmodels_glm_with_item_clusters():
    rng = np.random.default_rng(3)
    groups = {
        p: [[bool(rng.random() < 0.3 + 0.5 * p) for _ in range(3)] for _ in range(10)]
        for p in (0.4, 0.6, 0.8, 0.95)
    }
    frame = cell(groups)
    trend = setting_trend(frame)
    glm = sm.GLM(
        frame["coherent"].astype(float),
        sm.add_constant(frame["number"].astype(float)),
        family=sm.families.Binomial(),
    ).fit(cov_type="cluster", cov_kwds={"groups": frame["item"].to_numpy()})
    assert trend["slope"] == pytest.approx(glm.params.iloc[1], rel=1e-5)
    assert trend["slope_ci"] == pytest.approx(list(glm.conf_int().iloc[1]), rel=1e-4)
    assert trend["p_value"] == pytest.approx(glm.pvalues.iloc[1], rel=1e-4)


def test_too_few_values_or_one_answer():
    assert setting_trend(cell({0.1: [[True]], 0.2: [[False]]})) is None
    same = setting_trend(cell({0.1: [[True]], 0.2: [[True]], 0.3: [[True]]}))
    assert same["slope"] is None and same["p_value"] is None and same["n_values"] == 3


def test_only_settings_with_numbers_only_have_trends():
    values = generation_values(
        generation=pd.Series(
            {
                1: '{"p": 0.4, "model": "gpt2", "k": 40}',
                2: '{"p": 0.6, "model": "gpt2", "k": "forty"}',
                3: '{"p": null, "model": "gpt3"}',
            },
            dtype=object,
        )
    )
    numeric = numeric_settings(values)
    assert sorted(zip(numeric["item"], numeric["key"], numeric["number"], strict=True)) == [
        (1, "p", 0.4),
        (2, "p", 0.6),
    ]


def test_setting_trends_per_group_and_stage():
    frame = cell(HAND).assign(group="lay", stage="S1")
    generation = pd.Series(
        {
            item: f'{{"p": {number}}}'
            for item, number in zip(frame["item"], frame["number"], strict=True)
        },
        dtype=object,
    )
    values = generation_values(generation=generation[~generation.index.duplicated()])
    trends = metrics.setting_trends(
        judgements=frame, values=values, stage_order=["S1"], group_order=["lay"]
    )
    assert trends["lay"]["S1"]["p"]["slope"] == pytest.approx(2 * math.log(2), abs=1e-6)


def test_the_position_term_beside_the_setting_matches_statsmodels_glm():
    rng = np.random.default_rng(5)
    groups = {
        p: [[bool(rng.random() < 0.3 + 0.5 * p) for _ in range(3)] for _ in range(12)]
        for p in (0.4, 0.6, 0.8, 0.95)
    }
    frame = cell(groups)
    frame["position"] = rng.integers(1, 6, size=len(frame)).astype(float)
    trend = setting_trend(frame)
    glm = sm.GLM(
        frame["coherent"].astype(float),
        sm.add_constant(frame[["number", "position"]].astype(float)),
        family=sm.families.Binomial(),
    ).fit(cov_type="cluster", cov_kwds={"groups": frame["item"].to_numpy()})
    assert trend["position_slope"] == pytest.approx(glm.params["position"], rel=1e-5)
    assert trend["position_p"] == pytest.approx(glm.pvalues["position"], rel=1e-4)
    # Without positions the term is null.
    assert setting_trend(frame.drop(columns="position"))["position_slope"] is None
