"""Dasher's control mode: a box after the letters whose children are actions, and the text edits they make.

As in Dasher (``ControlManager``, ``NodeCreationManager::AddExtras``), every letter box ends with a control box
that takes a fixed share of it (``CONTROL_SHARE``, Dasher's 1/20) whatever the model says; the letters share
the rest in proportion to their probabilities. The control box's children are the actions, all the same size
(not weighted by the model). An action happens when the crosshair enters its box, as a character would be
output; the zoom then starts again from the text (see ``ZoomModel``). Nothing here knows about Qt: the zoom
reports the action in its ``Frame`` and the front end carries out what it owns (speech, the clipboard).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

CONTROL_SHARE = 1 / 20  # of every letter box (Dasher: NORMALIZATION / 20)


class Action(StrEnum):
    LETTERS = "letters"  # back to the letters (Dasher's escape, <alph/>): nothing else happens
    STOP = "stop"
    DELETE_CHAR = "delete-char"
    DELETE_WORD = "delete-word"
    DELETE_SENTENCE = "delete-sentence"
    SPEAK = "speak"  # the current message
    SPEAK_SENTENCE = "speak-sentence"  # its last sentence
    COPY = "copy"  # all the text
    NEW_MESSAGE = "new-message"
    PHRASE = "phrase"  # a quick phrase (adapt/phrases.py): its text is written into the message
    # in the More box: what the window's buttons do, for someone with no pointer and no keyboard
    UNDO_RUN = "undo-run"  # take back the last run of writing (Undo writing)
    SAVE = "save"  # all the text into a new file
    CLEAR = "clear"  # throw the text away (with an Undo)
    RESTORE = "restore"  # the unsaved text of an earlier run, when the window offers it
    FASTER = "faster"
    SLOWER = "slower"


@dataclass(frozen=True)
class ControlItem:
    """One box of the control mode: a box of boxes (``action`` None: the control box, More, the quick phrases), or
    one of the actions (a quick phrase: ``Action.PHRASE`` with its ``text``)."""

    label: str
    action: Action | None = None
    text: str = ""  # what a quick phrase writes
    children: tuple[ControlItem, ...] = ()  # a box of boxes: its children, of equal size (not the phrases')


# the control box's last box: its children are the quick phrases, each sized by how often it was used
PHRASES_BOX = ControlItem("Phrases")
NO_PHRASES = ControlItem("No phrases yet", Action.LETTERS)  # what the phrases' box holds while there are none
PHRASE_LABEL = 40  # characters of a phrase shown on its box
# the rest of what a person needs without a pointer or a keyboard: everything the toolbars do
MORE_BOX = ControlItem("More", children=(
    ControlItem("Undo writing", Action.UNDO_RUN),
    ControlItem("Save", Action.SAVE),
    ControlItem("Speak sentence", Action.SPEAK_SENTENCE),
    ControlItem("Restore unsaved", Action.RESTORE),
    ControlItem("Faster", Action.FASTER),
    ControlItem("Slower", Action.SLOWER),
    ControlItem("Clear", Action.CLEAR),
))
# top to bottom in the control box; each takes 1/len of it
CONTROL_ITEMS: tuple[ControlItem, ...] = (
    ControlItem("Letters", Action.LETTERS),
    ControlItem("Stop", Action.STOP),
    ControlItem("⌫ Char", Action.DELETE_CHAR),
    ControlItem("⌫ Word", Action.DELETE_WORD),
    ControlItem("⌫ Sentence", Action.DELETE_SENTENCE),
    ControlItem("Speak", Action.SPEAK),
    MORE_BOX,
    ControlItem("Copy", Action.COPY),
    ControlItem("New message", Action.NEW_MESSAGE),
    PHRASES_BOX,
)
CONTROL_BOX = ControlItem("Control", children=CONTROL_ITEMS)
PHRASES_INDEX = CONTROL_ITEMS.index(PHRASES_BOX)


def _paths(items: tuple[ControlItem, ...], above: tuple[int, ...] = ()) -> dict[Action, tuple[int, ...]]:
    paths: dict[Action, tuple[int, ...]] = {}
    for i, item in enumerate(items):
        if item.action is not None:
            paths[item.action] = (*above, i)
        paths.update(_paths(item.children, (*above, i)))
    return paths


# each action's boxes from inside the control box (an index at each level: More's actions take two)
ACTION_PATH: dict[Action, tuple[int, ...]] = _paths(CONTROL_ITEMS)


def action_label(action: Action) -> str:
    """What an action's box says ("Phrase" for a quick phrase)."""
    stack = list(CONTROL_ITEMS)
    while stack:
        item = stack.pop()
        if item.action == action:
            return item.label
        stack.extend(item.children)
    return "Phrase"
DELETIONS = (Action.DELETE_CHAR, Action.DELETE_WORD, Action.DELETE_SENTENCE)
# what acts only once confirmed (``ZoomSettings.confirm``), never from a pass through its box or from a resting gaze
# that drifted into it: everything that reaches another person or program, loses text or changes the message or the
# writing (all but Letters and Stop, which change nothing, and deleting a character, which backing out does too)
CONFIRMED = frozenset(Action) - {Action.LETTERS, Action.STOP, Action.DELETE_CHAR}
# what an action costs at least, from the letter box it is entered from: the control box's share, then one of
# the equal children
ACTION_BITS = -math.log2(CONTROL_SHARE / len(CONTROL_ITEMS))

def phrase_item(text: str) -> ControlItem:
    """A quick phrase's box: it writes ``text``; its label is the start of the text."""
    label = text if len(text) <= PHRASE_LABEL else text[: PHRASE_LABEL - 1].rstrip() + "…"
    return ControlItem(label, Action.PHRASE, text)


_SENTENCE_END = re.compile(r"[.!?\n][\"')\]]*\s+")


def deletion(text: str, action: Action) -> int:
    """How many characters at the end of ``text`` (the message so far) ``action`` deletes.

    A word is the last run of non-spaces with the spaces after it ("I want tea" and "I want tea " both lose
    "tea"); a sentence runs back to the end of the previous one (".", "!", "?" or a new line, then spaces), its
    own end included; a character is the last one."""
    if action == Action.DELETE_CHAR:
        return min(1, len(text))
    if action == Action.DELETE_WORD:
        kept = text.rstrip()
        while kept and not kept[-1].isspace():
            kept = kept[:-1]
        return len(text) - len(kept)
    if action == Action.DELETE_SENTENCE:
        return len(text) - sentence_start(text)
    return 0


def sentence_start(text: str) -> int:
    """Where the last sentence of ``text`` begins (after the end of the one before; 0 when there is none)."""
    body = text.rstrip()
    body = body.rstrip(".!?\"')]")  # its own end does not count
    start = 0
    for match in _SENTENCE_END.finditer(body):
        start = match.end()
    return start


def last_sentence(text: str) -> str:
    """The last sentence of ``text`` (stripped), e.g. to speak it."""
    return text[sentence_start(text):].strip()
