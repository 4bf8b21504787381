"""The item panel's single-key shortcuts: the one place their keys are chosen.

``Y`` and ``N`` answer the coherence question, the rating after Yes takes its value's
digit (1 to 5), and each error category gets one key of ``CATEGORY_KEYS`` in display
order: the digits 1 to 9, then the letters that mean nothing else on the page.
``MOST_EVIDENT_KEY`` followed by a ticked category's key makes it the most evident
error. In a Likert stage the digits rate the marked dimension (typed as a number: 1 then
0 for 10, 7 then 5 for 75 on a slider) and ``LIKERT_KEYS`` say "cannot judge" and move
to the next or previous dimension. A pairwise stage's ``PAIRWISE_KEYS`` choose A, B or
a tie; a ranking stage's ``RANKING_KEYS`` move the focused candidate or tie it with the
one above. The template shows each key next to its checkbox and radio button and hands it
to ``static/js/annotate.js`` in ``data-key`` (the most evident error's in the form's
``data-most-evident-key``), so the script holds no key of its own.
"""

YES_KEY = "y"
NO_KEY = "n"
MOST_EVIDENT_KEY = "m"
# What the item panel's template shows and hands to the script.
ITEM_KEYS = {"yes": YES_KEY, "no": NO_KEY, "most_evident": MOST_EVIDENT_KEY}
# A Likert stage's: no Yes or No there, so "n" is free for "next".
LIKERT_KEYS = {"next": "n", "previous": "p", "cannot_judge": "c"}
# A pairwise stage's: the candidate shown on the left (A), on the right (B), or a tie.
PAIRWISE_KEYS = {"a": "a", "b": "b", "tie": "t"}
# A ranking stage's, on the candidate that has the focus (the arrow keys move the focus
# between candidates): move it up or down, or tie it with the one above (again: untie).
RANKING_KEYS = {"up": "u", "down": "d", "tie": "t"}
CATEGORY_KEYS = "123456789" + "".join(
    letter
    for letter in "abcdefghijklmnopqrstuvwxyz"
    if letter not in (YES_KEY, NO_KEY, MOST_EVIDENT_KEY)
)


def category_keys(count: int) -> list[str]:
    """The keys of ``count`` categories in display order. There are more keys than a
    study can have categories (``MAX_CATEGORY_BIT``), so every category has one."""
    if count > len(CATEGORY_KEYS):
        raise ValueError(f"At most {len(CATEGORY_KEYS)} categories have a key.")
    return list(CATEGORY_KEYS[:count])
