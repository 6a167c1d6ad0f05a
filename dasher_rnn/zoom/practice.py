"""Practice with a target (Dasher's game mode), without a toolkit: the tutorial's engine.

The tutorial shows the user a short phrase and the path to it: the box of the next character to steer
into (``target_path``, walked like ``simulate.target_pointer`` walks it), the point a practised user
would aim at (``target_pointer`` itself), and when the text went astray, that backing out is next. With the
control box on, ``action_path`` is the way to one of its actions (the control box, then the action's box), for the
tutorial's control-box step. Each
phrase is scored as the controller measures any message (``MessageStats``: seconds spent writing, bits
zoomed, characters backed out of) and, at the end, ``suggest_speed`` turns the scores into a speed for this
user. Practice writes through a ``PracticeSource``, so none of it is learned.
"""

from __future__ import annotations

from dataclasses import dataclass

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.zoom.boxes import Box
from dasher_rnn.zoom.control import ACTION_PATH, CONTROL_BOX, CONTROL_ITEMS, PHRASES_BOX, Action
from dasher_rnn.zoom.controller import SPEED_RANGE
from dasher_rnn.zoom.figures import MessageStats
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.simulate import control_path

PHRASES = ("hello", "yes please", "see you soon")  # short, lower case, common: the first hour's phrases
PHRASES_BY_LANGUAGE = {  # the same three in the languages written here so far
    "en": PHRASES,
    "de": ("hallo", "ja bitte", "bis bald"),
    "fr": ("bonjour", "oui merci", "à bientôt"),
    "es": ("hola", "sí por favor", "hasta pronto"),
    "it": ("ciao", "sì grazie", "a presto"),
    "pt": ("olá", "sim obrigado", "até logo"),
    "nl": ("hallo", "ja graag", "tot straks"),
    "pl": ("cześć", "tak proszę", "do zobaczenia"),
    "ar": ("مرحبا", "نعم شكرا", "مع السلامة"),
    "he": ("שלום", "כן תודה", "להתראות"),
}
AHEAD = 3  # characters of the path shown: the next box and the two after it
FASTER_RATE = 0.75  # reached this share of the speed ...
FASTER_CORRECTIONS = 0.1  # ... backing out of at most this many characters per character: try faster
SLOWER_CORRECTIONS = 0.25  # backed out of more than this per character: slower
STEP = 1.25  # a suggestion moves the speed by this factor


def practice_phrases(alphabet: Alphabet) -> tuple[str, ...]:
    """The tutorial's phrases in the alphabet's language; for a language without them here, three short runs of the
    alphabet's own first letters (steering practice all the same)."""
    written = [p for p in PHRASES_BY_LANGUAGE.get(alphabet.language or "en", ()) if all(ch in alphabet for ch in p)]
    if written:
        return tuple(written)
    letters = alphabet.groups[0].symbols
    return tuple(letters[i : i + 3] for i in range(0, 9, 3) if letters[i : i + 3])


@dataclass(frozen=True)
class TargetBox:
    """The box of ``target[index]`` on screen now (Dasher y; the box reaches from the right edge to x = y2 - y1)."""

    index: int
    char: str
    y1: float
    y2: float


def on_course(zoom: ZoomModel, target: str) -> bool:
    """The text so far (context included) is the start of ``target``: no backing out needed."""
    return target.startswith(zoom.text)


def target_path(zoom: ZoomModel, target: str, ahead: int = AHEAD) -> list[TargetBox]:
    """The boxes of the next ``ahead`` characters of ``target`` (the whole text, context included) still to be
    written, nearest first. After a wrong character the next box is the right one beside it (steering into it
    backs out of the wrong one); empty when the text went astray above the root (back out first: the boxes are
    off the screen) or the target is written."""
    if not target.startswith(zoom.root_text):
        return []
    written = 0  # how much of the target the text has right
    while written < min(len(target), len(zoom.text)) and target[written] == zoom.text[written]:
        written += 1
    box: Box | None = zoom.root
    y1, y2 = zoom.root_lo, zoom.root_hi
    path: list[TargetBox] = []
    k = len(zoom.root_text)
    stop = min(len(target), written + ahead)
    while k < stop and box is not None and target[k] in zoom.alphabet:
        y1, y2 = zoom.child_range(box, y1, y2, zoom.alphabet.index(target[k]))
        if y2 - y1 < 1.0:
            break
        if k >= written:
            path.append(TargetBox(k, target[k], y1, y2))
        box = box.children.get(zoom.alphabet.index(target[k]))
        k += 1
    return path


def action_path(zoom: ZoomModel, target: str, action: Action, ahead: int = AHEAD) -> list[TargetBox]:
    """The boxes on the way to ``action``'s box in the control box after ``target`` (the whole text, context
    included), nearest first, at most ``ahead``: the characters of ``target`` still to be written (as in
    ``target_path``), then the control box and the action's box (their ``char`` is the box's label, their ``index``
    counts on past the end of ``target``). Empty when the text went astray above the root, or the view is inside a
    control box that is not on the way (back out first). Not for ``Action.PHRASE`` (which phrase is not said)."""
    in_control = not zoom.root.is_letter
    if action == Action.PHRASE or not target.startswith(zoom.root_text) or zoom.root.item is PHRASES_BOX:
        return []
    if in_control and target != zoom.root_text:
        return []
    rest = control_path(zoom, action)
    if rest is None:
        return []
    items, level = [CONTROL_BOX], CONTROL_ITEMS
    for index in ACTION_PATH[action]:
        items.append(level[index])
        level = level[index].children
    labels = [item.label for item in items][len(items) - len(rest):]
    written = 0  # how much of the target the text has right
    while written < min(len(target), len(zoom.text)) and target[written] == zoom.text[written]:
        written += 1
    steps = [(zoom.alphabet.index(ch), ch) for ch in target[len(zoom.root_text):] if ch in zoom.alphabet]
    if len(steps) != len(target) - len(zoom.root_text):
        return []  # a character the alphabet does not have: no way there
    box: Box | None = zoom.root
    y1, y2 = zoom.root_lo, zoom.root_hi
    path: list[TargetBox] = []
    k = len(zoom.root_text)
    for symbol, label in steps + list(zip(rest, labels, strict=True)):
        if box is None or len(path) >= ahead:
            break
        y1, y2 = zoom.child_range(box, y1, y2, symbol)
        if y2 - y1 < 1.0:
            break
        if k >= written:
            path.append(TargetBox(k, label, y1, y2))
        box = box.children.get(symbol)
        k += 1
    return path


@dataclass(frozen=True)
class SpeedSuggestion:
    speed_bps: float  # the suggested speed setting
    current_bps: float  # the setting the practice ran at
    bits_per_second: float  # the rate reached while writing
    chars_per_minute: float
    corrections_per_char: float
    phrases: int  # phrases finished
    advice: str  # one sentence for the user


def suggest_speed(finished: list[MessageStats], current_bps: float) -> SpeedSuggestion | None:
    """A speed for this user from the phrases they finished, each as the controller measured it (None when they
    finished none).

    The speed is the most the zoom may go; a user who reached most of it without backing out much can go
    faster, one who backed out often does better slower, and otherwise it stays."""
    done = [s for s in finished if s.seconds > 0]
    if not done:
        return None
    seconds = sum(s.seconds for s in done)
    chars = sum(s.characters for s in done)
    rate = max(0.0, sum(s.bits for s in done)) / seconds
    corrections = sum(s.corrections for s in done) / chars
    if corrections > SLOWER_CORRECTIONS:
        speed = current_bps / STEP
        advice = "You backed out of many boxes: a slower speed gives you more time to aim."
    elif rate >= FASTER_RATE * current_bps and corrections <= FASTER_CORRECTIONS:
        speed = current_bps * STEP
        advice = "You kept up with the zoom and rarely backed out: try a little faster."
    else:
        speed = current_bps
        advice = "This speed suits you for now; point further right to go faster when you are ready."
    speed = round(min(max(speed, SPEED_RANGE[0]), SPEED_RANGE[1]), 1)
    return SpeedSuggestion(speed, current_bps, rate, 60 * chars / seconds, corrections, len(done), advice)
