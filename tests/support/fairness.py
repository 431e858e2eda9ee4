"""Reading a service order: how far one team got ahead of another while that one still asked."""

from __future__ import annotations

from collections import Counter


def largest_lead(order: list[str], ahead: str, behind: str) -> int:
    """The most units `ahead` had over `behind` at any point before `behind`'s last unit was served."""
    counts: Counter[str] = Counter()
    lead, total_behind = 0, order.count(behind)
    for team in order:
        counts[team] += 1
        if counts[behind] < total_behind:
            lead = max(lead, counts[ahead] - counts[behind])
    return lead
