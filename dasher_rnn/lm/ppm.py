"""Dasher's PPM language model, reproduced exactly.

Order 5, blending over every suffix context without exclusion, per-context estimate
(c - beta)/(T + alpha) with alpha = 0.49 and beta = 0.77 computed in Dasher's integer
arithmetic, leftover mass spread uniformly, update exclusion when learning, and the
default context ". " (entered, not learned) at a reset.

Storage: a string x of up to ``max_order + 1`` symbols is a base-R integer key (symbol ids
+ 1, last symbol least significant), so the children of context c are the keys
c*R+1 .. c*R+R-1. R is 128 for an alphabet of up to 127 symbols (English; orders up to 8 fit 63 bits) and 256
for a larger one (French has 130 symbols; orders up to 6). Counts trained from text live in two sorted numpy arrays (built in one
vectorised pass); whatever is learned afterwards lives in a small per-context overlay of dicts,
merged into the arrays whenever it holds ``COMPACT_AT`` contexts or 1/64 of the arrays' length,
whichever is more (16 bytes a count there, against about 300 in a dict; the merge copies the arrays,
so the larger they are the less often it runs), so a PPM that learns for months grows by its counts
and nothing more.
The vectorised build relies on an identity of update exclusion: for a string x shorter than
the top order, count(x) = number of distinct symbols a with "a x" in the text, plus the
occurrences of x at the start of a segment; at the top order it is the plain count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dasher_rnn.alphabet import BREAK, Alphabet
from dasher_rnn.lm.protocol import DASHER_FLOOR, DASHER_TOTAL, uniform_add

RADIX = 128  # the key's base for an alphabet of up to 127 symbols
WIDE_RADIX = 256  # for up to 255 (every alphabet: BREAK is 255)
KEY_BITS = 63


def radix_for(alphabet: Alphabet) -> int:
    return RADIX if len(alphabet) < RADIX else WIDE_RADIX


def max_order_for(alphabet: Alphabet) -> int:
    """The highest order whose keys (order + 1 symbols) fit 63 bits: 8 for an alphabet of up to 127 symbols, else 6."""
    bits = radix_for(alphabet).bit_length() - 1
    return KEY_BITS // bits - 1


PROBS_RESOLUTION = 1 << 24
MAX_COUNT = 1 << 40  # a count read from a snapshot (a lifetime of writing is ~10^9 characters): 100 x the counts of
# a context stay far inside int64
COMPACT_AT = 4096  # learned contexts held in the overlay before it is merged into the sorted arrays


def split_segments(ids: np.ndarray) -> list[np.ndarray]:
    """Pieces of an encoded array between ``BREAK`` codes (characters outside the alphabet)."""
    ids = np.asarray(ids)
    cuts = np.flatnonzero(ids == BREAK)
    pieces = np.split(ids, cuts)
    return [p[1:] if i else p for i, p in enumerate(pieces) if len(p[1:] if i else p)]


def _count_strings(segments: list[np.ndarray], max_order: int, radix: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys and counts that sequential learning with update exclusion would produce."""
    segments = [s for s in segments if len(s)]
    if not segments:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids = np.concatenate(segments).astype(np.int64) + 1
    lengths = np.array([len(s) for s in segments])
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    pos = np.arange(len(ids)) - starts  # position within its segment
    keys_by_len: dict[int, np.ndarray] = {}
    key = np.zeros(len(ids), np.int64)
    for length in range(1, max_order + 2):
        shifted = np.zeros(len(ids), np.int64)
        if length <= len(ids):
            shifted[length - 1 :] = ids[: len(ids) - length + 1]
        key = key + shifted * radix ** (length - 1)
        keys_by_len[length] = key
    all_keys, all_counts = [], []
    top = max_order + 1
    k, c = np.unique(keys_by_len[top][pos >= top - 1], return_counts=True)
    all_keys.append(k)
    all_counts.append(c)
    for length in range(1, top):
        longer = np.unique(keys_by_len[length + 1][pos >= length])
        k_ext, c_ext = np.unique(longer % radix**length, return_counts=True)
        k_start, c_start = np.unique(keys_by_len[length][pos == length - 1], return_counts=True)
        k = np.union1d(k_ext, k_start)
        c = np.zeros(len(k), np.int64)
        c[np.searchsorted(k, k_ext)] += c_ext
        c[np.searchsorted(k, k_start)] += c_start
        all_keys.append(k)
        all_counts.append(c)
    keys = np.concatenate(all_keys)
    order = np.argsort(keys)
    return keys[order], np.concatenate(all_counts)[order].astype(np.int64)


class PPMContext:
    """The last ``max_order`` symbols and the order of the deepest existing suffix node (Dasher's head)."""

    __slots__ = ("symbols", "order")

    def __init__(self, symbols: tuple[int, ...] = (), order: int = 0):
        self.symbols, self.order = symbols, order

    def suffix_key(self, length: int, radix: int) -> int:
        key = 0
        for s in self.symbols[len(self.symbols) - length :] if length else ():
            key = key * radix + s + 1
        return key


@dataclass(frozen=True)
class LearnRecord:
    """What one ``learn`` changed: the contexts whose count of ``symbol`` went up, and the learning context before."""

    symbol: int
    contexts: tuple[int, ...]
    previous: PPMContext
    new: int = 0  # of those, the strings stored for the first time (what ``num_contexts`` grew by)


class PPMModel:
    """Dasher's PPM (see module docstring); implements ``LanguageModel``."""

    def __init__(self, alphabet: Alphabet, max_order: int = 5, alpha: int = 49, beta: int = 77,
                 default_context: str = ". "):
        if not 0 <= max_order <= max_order_for(alphabet):
            raise ValueError(f"PPM order must be 0..{max_order_for(alphabet)} for {len(alphabet)} symbols (keys of "
                             f"order + 1 symbols fit 63 bits), not {max_order}")
        self.radix = radix_for(alphabet)
        self.alphabet = alphabet
        self.max_order, self.alpha, self.beta = max_order, alpha, beta
        self.default_context = default_context
        self._keys = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        self._overlay: dict[int, dict[int, int]] = {}  # context key -> {symbol: count}, complete
        self._predict = PPMContext()
        self._learn = PPMContext()
        self.reset()

    # -- storage ---------------------------------------------------------------------
    def _children(self, ctx_key: int) -> dict[int, int] | tuple[np.ndarray, np.ndarray]:
        if ctx_key in self._overlay:
            return self._overlay[ctx_key]
        lo, hi = np.searchsorted(self._keys, [ctx_key * self.radix + 1, ctx_key * self.radix + self.radix])
        return self._keys[lo:hi] - ctx_key * self.radix - 1, self._counts[lo:hi]

    def _children_arrays(self, ctx_key: int) -> tuple[np.ndarray, np.ndarray]:
        children = self._children(ctx_key)
        if isinstance(children, dict):
            return np.fromiter(children, np.int64, len(children)), np.fromiter(children.values(), np.int64, len(children))
        return children

    def _touch(self, ctx_key: int) -> dict[int, int]:
        """The mutable children of a context (copied from the base arrays on first change)."""
        children = self._overlay.get(ctx_key)
        if children is None:
            syms, counts = self._children_arrays(ctx_key)  # not in the overlay: the base arrays' slices
            children = self._overlay[ctx_key] = dict(zip(syms.tolist(), counts.tolist(), strict=True))
        return children

    def _exists(self, ctx_key: int, symbol: int) -> bool:
        if ctx_key in self._overlay:
            return self._overlay[ctx_key].get(symbol, 0) > 0
        key = ctx_key * self.radix + symbol + 1
        i = int(np.searchsorted(self._keys, key))
        return i < len(self._keys) and self._keys[i] == key

    @property
    def num_contexts(self) -> int:
        """Stored counts (strings with a count above 0), the learned ones included."""
        n = len(self._keys)
        for ctx_key, children in self._overlay.items():  # an overlay context replaces its range of the arrays
            lo, hi = np.searchsorted(self._keys, [ctx_key * self.radix + 1, ctx_key * self.radix + self.radix])
            n += sum(1 for count in children.values() if count > 0) - int(hi - lo)
        return n

    # -- training --------------------------------------------------------------------
    def train_text(self, text: str) -> int:
        """Learn a (normalised) text; characters outside the alphabet break the context. Returns symbols learned."""
        return self.train_ids(self.alphabet.encode(text))

    def train_ids(self, ids: np.ndarray) -> int:
        segments = split_segments(ids)
        if not len(self._keys) and not self._overlay:
            self._keys, self._counts = _count_strings(segments, self.max_order, self.radix)
        else:
            for segment in segments:
                self._learn = PPMContext()
                for s in segment.tolist():
                    self.learn(s)
        self.reset()
        return sum(len(s) for s in segments)

    # -- snapshots (a user's PPM persists with the profile as counts, not as text to re-read) ------
    def snapshot(self) -> dict[str, np.ndarray]:
        """All counts as sorted (key, count) arrays: the trained base with every learned change merged in."""
        keys, counts = self._keys, self._counts
        if self._overlay:
            keep = np.ones(len(keys), bool)
            added_keys, added_counts = [], []
            for ctx_key, children in self._overlay.items():
                lo, hi = np.searchsorted(keys, [ctx_key * self.radix + 1, ctx_key * self.radix + self.radix])
                keep[lo:hi] = False
                for symbol, count in children.items():
                    if count > 0:
                        added_keys.append(ctx_key * self.radix + symbol + 1)
                        added_counts.append(count)
            added = np.array(added_keys, np.int64)
            order = np.argsort(added)  # a sorted merge: no sort of the whole store
            keys, counts = keys[keep], counts[keep]
            at = np.searchsorted(keys, added[order])
            keys = np.insert(keys, at, added[order])
            counts = np.insert(counts, at, np.array(added_counts, np.int64)[order])
        return {"keys": keys, "counts": counts, "max_order": np.array([self.max_order], np.int64)}

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Replace all counts with a ``snapshot`` (checked: a bad one raises ValueError and changes nothing)."""
        keys, counts, max_order = (np.asarray(arrays.get(k)) for k in ("keys", "counts", "max_order"))
        if max_order.shape != (1,) or int(max_order[0]) != self.max_order:
            raise ValueError(f"PPM snapshot is for order {max_order.tolist()}, not {self.max_order}")
        if keys.dtype != np.int64 or counts.dtype != np.int64 or keys.shape != counts.shape or keys.ndim != 1:
            raise ValueError("PPM snapshot arrays must be two int64 vectors of one length")
        symbols = keys % self.radix - 1
        if np.any(np.diff(keys) <= 0) or np.any((counts <= 0) | (counts > MAX_COUNT)) \
                or np.any((symbols < 0) | (symbols >= len(self.alphabet))):
            raise ValueError(f"PPM snapshot keys must be sorted, unique and for this alphabet, with counts in "
                             f"1..{MAX_COUNT}")
        self._keys, self._counts, self._overlay = keys, counts, {}
        self.reset()

    # -- LanguageModel protocol -----------------------------------------------------------
    def reset(self) -> None:
        self._predict = PPMContext()
        for ch in self.default_context:
            if ch in self.alphabet:
                self.advance(self.alphabet.index(ch))
        self._learn = PPMContext(self._predict.symbols, self._predict.order)

    def cut(self) -> None:
        self._predict = PPMContext()

    def _entered(self, ctx: PPMContext, symbol: int) -> PPMContext:
        symbols = (ctx.symbols + (symbol,))[-self.max_order :]
        order = min(ctx.order + 1, self.max_order)
        probe = PPMContext(ctx.symbols, 0)
        while order > 0:
            probe.symbols = ctx.symbols[len(ctx.symbols) - (order - 1) :] if order > 1 else ()
            if self._exists(probe.suffix_key(order - 1, self.radix), symbol):
                break
            order -= 1
        return PPMContext(symbols, order)

    def advance(self, symbol: int) -> None:
        self._predict = self._entered(self._predict, symbol)

    def learn(self, symbol: int) -> LearnRecord:
        """Commit a symbol; the returned record lets ``unlearn`` take it back exactly."""
        ctx = self._learn
        touched = []
        new = 0
        for order in range(ctx.order, -1, -1):  # update exclusion: stop where the symbol was known
            key = ctx.suffix_key(order, self.radix)
            children = self._touch(key)
            touched.append(key)
            if children.get(symbol, 0) > 0:
                children[symbol] += 1
                break
            children[symbol] = 1
            new += 1
        self._learn = PPMContext((ctx.symbols + (symbol,))[-self.max_order :], min(ctx.order + 1, self.max_order))
        if len(self._overlay) >= max(COMPACT_AT, len(self._keys) >> 6):  # each merge copies the arrays: the
            self.compact()  # bigger they are, the more the overlay may hold first (at most 1/64 of them)
        return LearnRecord(symbol, tuple(touched), ctx, new)

    def compact(self) -> None:
        """Merge the overlay into the sorted arrays (the counts, and so every prediction, stay as they are)."""
        if self._overlay:
            merged = self.snapshot()
            self._keys, self._counts, self._overlay = merged["keys"], merged["counts"], {}

    def unlearn(self, record: LearnRecord) -> None:
        """Undo the last ``learn`` not yet undone (records are undone newest first, across compactions too)."""
        for key in record.contexts:
            children = self._touch(key)
            children[record.symbol] -= 1
            if not children[record.symbol]:
                del children[record.symbol]
        self._learn = record.previous

    def distribution(self, norm: int, ctx: PPMContext | None = None) -> np.ndarray:
        """Dasher's CPPMLanguageModel::GetProbs with no uniform part: integers summing to ``norm``
        (in the prediction context, or in ``ctx``)."""
        n = len(self.alphabet)
        probs = np.zeros(n, np.int64)
        to_spend = norm
        ctx = self._predict if ctx is None else ctx
        for order in range(ctx.order, -1, -1):
            syms, counts = self._children_arrays(ctx.suffix_key(order, self.radix))
            keep = counts > 0
            syms, counts = syms[keep], counts[keep]
            if not len(counts):
                continue
            total = int(counts.sum())
            p = to_spend * (100 * counts - self.beta) // (100 * total + self.alpha)
            probs[syms] += p
            to_spend -= int(p.sum())
        share = to_spend // n
        probs += share
        to_spend -= share * n
        if to_spend:
            probs[n - to_spend :] += 1
        return probs

    def dasher_distribution(self, floor: float = DASHER_FLOOR) -> np.ndarray:
        return self.dasher_distribution_at(self._predict, floor)

    # -- contexts as values (the zoom model holds one per box) ------------------------
    def context_after(self, text: str) -> PPMContext:
        """The prediction context at a message start (the default context) followed by ``text``."""
        ctx = PPMContext()
        for ch in self.default_context + text:
            ctx = self._entered(ctx, self.alphabet.index(ch)) if ch in self.alphabet else PPMContext()
        return ctx

    def entered(self, ctx: PPMContext, symbol: int) -> PPMContext:
        return self._entered(ctx, symbol)

    def dasher_distribution_at(self, ctx: PPMContext, floor: float = DASHER_FLOOR) -> np.ndarray:
        add = uniform_add(len(self.alphabet), floor)
        return self.distribution(DASHER_TOTAL - add * len(self.alphabet), ctx) + add

    def probs(self) -> np.ndarray:
        return self.probs_at(self._predict)

    def probs_at(self, ctx: PPMContext) -> np.ndarray:
        """Probabilities without Dasher's floor; every symbol keeps at least 2^-24 (Dasher's integer
        arithmetic gives a symbol never seen nothing once the escape mass falls below one unit per symbol)."""
        return (self.distribution(PROBS_RESOLUTION - len(self.alphabet), ctx) + 1) / PROBS_RESOLUTION

    @property
    def prediction_order(self) -> int:
        """The order of the deepest context matching the prediction context (0: none)."""
        return self._predict.order

    def fork(self) -> PPMModel:
        twin = PPMModel.__new__(PPMModel)
        twin.__dict__.update(self.__dict__)
        twin._overlay = {k: dict(v) for k, v in self._overlay.items()}
        return twin
