"""How the statistics benchmarks print a rate: the share, its Wilson 95% interval and the count behind it.

Imported by the scripts next to it (``python benchmarks/NAME.py`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

import math

__all__ = ["wilson"]


def wilson(hits: int, total: int) -> str:
    """``4.2% [2.9, 6.0] (n=300)``: the share of ``hits`` in ``total`` with its Wilson score 95% interval."""
    if not total:
        return "- (n=0)"
    z, share = 1.959964, hits / total
    centre = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return f"{share:5.1%} [{100 * max(0.0, centre - half):4.1f}, {100 * min(1.0, centre + half):5.1f}] (n={total})"
