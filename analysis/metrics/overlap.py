"""Text-overlap metrics of a reflection against a reference (the human reflection of
its context), each a plain call of a vetted package with its defaults, so that the
numbers are reproducible from released data (docs/analysts/automatic-scores.md):

* ``bleu``: BLEU-4, NLTK's ``sentence_bleu([reference.split()], hypothesis.split())``:
  whitespace tokens, uniform 4-gram weights, no smoothing; 0–1.
* ``rouge_l``: the F-measure of ``rouge_score``'s
  ``RougeScorer(["rougeL"], use_stemmer=False).score(reference, hypothesis)``; 0–1.

Without smoothing, a hypothesis that shares no n-gram of some order 2–4 with the
reference gets NLTK's "0": ``sys.float_info.min`` in the geometric mean, a value near
1e-154 (exactly 0 without a shared word). It is kept as NLTK returns it, so ranks and
correlations are those of the plain NLTK call; NLTK's warning about it is silenced here.

Pure: lists of texts in, a numpy array out; the packages are imported on first use
(NLTK takes a moment to import, and only these functions need it).
"""

import warnings
from collections.abc import Callable, Sequence

import numpy as np

#: The metrics this platform computes, by the evaluator name their scores are stored
#: under. An imported evaluator may not take one of these names (ignoring case)
#: without being told to replace (``computed_metric_named``).
METRICS = ("bleu", "rouge_l")
LABELS = {"bleu": "BLEU-4", "rouge_l": "ROUGE-L"}


def computed_metric_named(evaluator: str) -> str | None:
    """The computed metric whose name ``evaluator`` is, ignoring case (``"BLEU"`` →
    ``"bleu"``), or None."""
    folded = evaluator.strip().casefold()
    return next((metric for metric in METRICS if metric == folded), None)


def bleu4(references: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
    """BLEU-4 of each hypothesis against its reference (see the module docstring)."""
    from nltk.translate.bleu_score import sentence_bleu

    with warnings.catch_warnings():
        # "The hypothesis contains 0 counts of N-gram overlaps ...": the score is then
        # NLTK's 0, kept as the plain call returns it.
        warnings.filterwarnings(
            "ignore", message=r"\s*The hypothesis contains 0 counts", category=UserWarning
        )
        scores = [
            sentence_bleu([reference.split()], hypothesis.split())
            for reference, hypothesis in zip(references, hypotheses, strict=True)
        ]
    return np.asarray(scores, dtype=float)


def rouge_l(references: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
    """ROUGE-L F-measure of each hypothesis against its reference."""
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(["rougeL"], use_stemmer=False)
    scores = [
        scorer.score(reference, hypothesis)["rougeL"].fmeasure
        for reference, hypothesis in zip(references, hypotheses, strict=True)
    ]
    return np.asarray(scores, dtype=float)


SCORERS: dict[str, Callable[[Sequence[str], Sequence[str]], np.ndarray]] = {
    "bleu": bleu4,
    "rouge_l": rouge_l,
}
