"""The s_waitcnt analysis's counter queues (irscope/isa/amdgcn_dataflow.py `waits`): a block's run over
its waits and issues, and the join of two paths' queues at a block's entry."""

from __future__ import annotations

from operator import itemgetter

# counter -> its queue: ({operation index: (lo, hi)}, lo offset, hi offset, bound): the operation's
# position in the counter's queue, youngest = 0, over all paths, is (lo + lo offset, min(hi + hi offset,
# limit - 1)). The offsets age a queue, and join it with an older copy of itself (an exec-masked block
# that issues a load or two), without rebuilding its dict; `bound` is at least every lo (NO_OPS: none).
Queue = tuple[dict[int, tuple[int, int]], int, int, int]
Queues = dict[str, Queue]
NO_OPS = -(1 << 40)  # the bound of a queue with no operations
_HI = itemgetter(1)
WIDENED = 1 << 40  # a hi offset that puts every position at the counter's limit


def run_block(events, state: Queues, limits, found) -> Queues:
    # An issue ages its counter's queue by one step: both offsets grow, which ages every entry at
    # once (min(min(h + 1, L) + 1, L) = min(h + 2, L)), and the new operation goes in at minus the
    # offsets. An entry whose lo reaches the limit is gone: those are dropped before a wait reads
    # the queue and at the block's end, when `bound` says there may be one.
    queues = dict(state)
    owned: set[str] = set()  # counters whose dict this run built: it may write them
    for i, waited, issued in events:
        for counter, value in waited:
            queue = queues.get(counter)
            if queue is None or not queue[0]:
                _record(found, i, counter, value, 0, ())
                continue
            limit = limits.get(counter, 63)
            ops, lo_add, hi_add, bound = queue
            if bound + lo_add >= limit:
                ops, bound = _present(ops, limit - lo_add)
                if not ops:
                    queues[counter] = (ops, lo_add, hi_add, bound)
                    owned.add(counter)
                    _record(found, i, counter, value, 0, ())
                    continue
            top = limit - 1
            deepest = max(map(_HI, ops.values())) + hi_add
            waiting = value - hi_add  # hi + hi_add >= value, and the limit caps positions at top
            _record(found, i, counter, value, (deepest if deepest < top else top) + 1,
                    (op for op, (_, hi) in ops.items() if hi >= waiting) if value <= top else ())
            # Definitely older than the `value` youngest: complete. Maybe older: complete on
            # the paths where it is, still outstanding (and among the youngest) on the others.
            cap = value - 1 if value <= top else top
            lo_cut, hi_cut = value - lo_add, cap - hi_add
            queues[counter] = ({op: (lo + lo_add, hi + hi_add if hi < hi_cut else cap)
                                for op, (lo, hi) in ops.items() if lo < lo_cut}, 0, 0, value - 1)
            owned.add(counter)
        for counter in issued:
            queue = queues.get(counter)
            if queue is None:
                ops, lo_add, hi_add, bound = {}, 1, 1, NO_OPS
                owned.add(counter)
            else:
                ops, lo_add, hi_add, bound = queue
                lo_add += 1
                hi_add += 1
                if counter not in owned:
                    ops = dict(ops)
                    owned.add(counter)
            ops[i] = (-lo_add, -hi_add)
            queues[counter] = (ops, lo_add, hi_add, bound if bound > -lo_add else -lo_add)
    for counter in owned:
        ops, lo_add, hi_add, bound = queues[counter]
        limit = limits.get(counter, 63)
        if bound + lo_add >= limit:
            ops, bound = _present(ops, limit - lo_add)
            queues[counter] = (ops, lo_add, hi_add, bound)
    return queues


def _present(ops: dict[int, tuple[int, int]], cut: int) -> tuple[dict[int, tuple[int, int]], int]:
    """The entries whose lo is under `cut` (the others have reached the limit), and their largest lo."""
    kept = {op: v for op, v in ops.items() if v[0] < cut}
    return kept, max(kept.values())[0] if kept else NO_OPS  # the largest (lo, hi) has the largest lo


def _record(found, i: int, counter: str, value: int, deepest: int, waited) -> None:
    old = found.get((i, counter))
    if old is None:
        found[(i, counter)] = (value, deepest, set(waited))
    else:
        old[2].update(waited)
        found[(i, counter)] = (value, max(old[1], deepest), old[2])


def merge(a: Queues | None, b: Queues, limits, widen: bool = False) -> Queues:
    """`a` joined with `b`; `a` itself when that adds nothing to it (the caller's test for a change).
    With `widen`, a position of an operation in `a` that the join moves up goes straight to the
    counter's limit instead (positions still growing after a few trips round a loop).

    Queue dicts are never changed once built (run_block copies before it writes), so the
    result shares them with `a` and `b`."""
    if a is None:
        return b
    out = None
    for counter, queue in b.items():
        mine = a.get(counter)
        if mine is queue:
            continue
        if mine is None:
            merged = queue
        else:
            merged = _join(mine, queue, limits.get(counter, 63), widen)
            if merged is mine:
                continue
        if out is None:
            out = dict(a)
        out[counter] = merged
    return a if out is None else out


def _join(mine: Queue, theirs: Queue, limit: int, widen: bool) -> Queue:
    """One counter's queues joined: each operation at (fewest lo, most hi) of the paths where it is
    outstanding; `mine` itself when nothing changes. Where one side holds every entry of the other as it
    is (a copy aged and with operations added, or the same queue), the shared entries join by the offsets'
    min and max, and only the operations one side added are moved: the rest is not rebuilt. Every entry
    of a queue is outstanding on its path (run_block drops those that reached the limit)."""
    ops, lo_add, hi_add, bound = mine
    their_ops, their_lo, their_hi, their_bound = theirs
    lo = lo_add if lo_add < their_lo else their_lo
    hi = hi_add if hi_add >= their_hi else (WIDENED if widen else their_hi)
    if ops is their_ops or ops.items() <= their_ops.items():
        added = their_ops.keys() - ops.keys() if len(their_ops) > len(ops) else ()
        if not added and (not ops or (lo == lo_add and (hi == hi_add or not _below_top(ops, hi_add, limit)))):
            return mine
        if not added:
            return (ops, lo, hi, bound)
        if lo == their_lo and hi == their_hi:
            return (their_ops, lo, hi, bound if bound > their_bound else their_bound)
        their_bound += their_lo - lo
        return (_moved(their_ops, added, their_lo - lo, their_hi - hi), lo, hi,
                bound if bound > their_bound else their_bound)
    if their_ops.items() <= ops.items():  # the same, the other way round: `mine` added operations
        if not their_ops or (lo == lo_add and (hi == hi_add or not _below_top(their_ops, hi_add, limit))):
            return mine
        return (_moved(ops, ops.keys() - their_ops.keys(), lo_add - lo, hi_add - hi), lo, hi, bound + lo_add - lo)
    return _join_entries(_positions(mine, limit), _positions(theirs, limit), mine, limit, widen)


def _moved(ops: dict[int, tuple[int, int]], moving, lo_shift: int, hi_shift: int) -> dict[int, tuple[int, int]]:
    """A copy of `ops` with the entries of `moving` re-expressed for offsets smaller by the shifts."""
    moved = dict(ops)
    for op in moving:
        op_lo, op_hi = ops[op]
        moved[op] = (op_lo + lo_shift, op_hi + hi_shift)
    return moved


def _below_top(ops: dict[int, tuple[int, int]], hi_add: int, limit: int) -> bool:
    """Whether an entry's hi is under the limit's top, so that a larger hi offset moves it."""
    return min(map(_HI, ops.values())) + hi_add < limit - 1


def _positions(queue: Queue, limit: int) -> dict[int, tuple[int, int]]:
    """The queue's (lo, hi) per operation, offsets applied (its own dict where they are 0)."""
    ops, lo_add, hi_add, _ = queue
    if not lo_add and not hi_add:
        return ops
    top = limit - 1
    hi_cut = top - hi_add
    return {op: (lo + lo_add, hi + hi_add if hi < hi_cut else top) for op, (lo, hi) in ops.items()}


def _join_entries(mine: dict, queue: dict, queue_of_mine: Queue, limit: int, widen: bool) -> Queue:
    """The join entry by entry, for queues that differ in more than their offsets and added operations."""
    if mine == queue:
        return queue_of_mine
    theirs = queue.get
    if not widen:
        merged = {op: mo if (qo := theirs(op)) is None or qo == mo else
                  (mo[0] if mo[0] < qo[0] else qo[0], mo[1] if mo[1] > qo[1] else qo[1])
                  for op, mo in mine.items()}
    else:
        top = limit - 1
        merged = {op: mo if (qo := theirs(op)) is None or qo == mo else
                  (mo[0] if mo[0] < qo[0] else qo[0], mo[1] if mo[1] >= qo[1] else top)
                  for op, mo in mine.items()}
    for op in queue.keys() - mine.keys():
        merged[op] = queue[op]
    if merged == mine:
        return queue_of_mine
    return (merged, 0, 0, max(merged.values())[0] if merged else NO_OPS)
