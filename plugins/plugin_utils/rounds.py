# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rounds of disjoint pairs (private; controller only)."""

from __future__ import annotations


def pack_rounds(pairs):
    """Pack pairs, in order, greedily into as few rounds of host-disjoint pairs as possible.

    A pair goes into the first round where neither of its hosts is busy yet, else opens a new round.
    """
    rounds = []
    busy = []
    for pair in pairs:
        pair = list(pair)
        for rnd, used in zip(rounds, busy):
            if pair[0] not in used and pair[1] not in used:
                rnd.append(pair)
                used.update(pair)
                break
        else:
            rounds.append([pair])
            busy.append(set(pair))
    return rounds
