"""One color per ranker, the same in every figure of a job and of a compare report."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PALETTE", "ranker_colors"]

#: Okabe-Ito's 8 colour-blind-safe colours, ordered so that the first five (most studies)
#: have five distinct hues (blue, orange, green, purple, black; the closest two 54 apart in
#: CIELAB) and the near pairs (blue / sky blue, orange / vermillion, orange / yellow) only
#: meet from the seventh ranker on; then the tab10 colours it lacks; cycled past 13 rankers
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#000000", "#56B4E9", "#D55E00",
           "#F0E442", "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#9467bd")


def ranker_colors(names: Iterable[str]) -> dict[str, str]:
    """A fixed color per ranker name: the sorted distinct names take the palette in order.

    Parameters
    ----------
    names : iterable of str
        Ranker names (or version labels), in any order, repeats allowed.

    Returns
    -------
    dict of str -> str
        Name -> hex color; the same set of names always gives the same colors, whatever
        their order.
    """
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}
