"""Quick phrases: the things a person says every day ("I need the nurse", "yes", "thank you"), kept with the profile.

A profile's phrases are ``<profiles>/<name>/phrases.json``: a list of ``{"text", "uses", "last_used"}``, most used
first (``PhraseList.ordered``). Each language has its own profile (``anna.de``), so each language has its own
phrases. The list is the user's: they add the current message, remove a phrase, and every use counts (the zoom
sizes each phrase's box by its uses, as Dasher sizes a box by its probability). A profile that has never stored
phrases starts with a few everyday ones in its language (``STARTERS``), which the user may remove like any other.

A phrase is written like written text: the zoom inserts it into the message (``zoom/model.py``), so it is typed,
spoken and learned by the model as if the user had written it. It must be in the writer's alphabet; ``add`` folds
it onto the alphabet (``normalise``) and refuses one that is empty, too long or already stored.

The file is the user's to edit, copy or break: it is read with ``files.read_json`` (a regular file of at most
``MAX_BYTES``, nested at most ``files.MAX_DEPTH`` deep), entries that are not phrases (a text with a lone surrogate
or a NUL among them: no file could hold it) are skipped and counted (``skipped``), and a file that cannot be read
at all is set aside (``files.set_aside``) when the list is next saved, never silently overwritten. Saving is one
``files.atomic_write``, readable by the user only. The file goes with the profile on export and import.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dasher_rnn.files import BadFile, UnreadableFile, atomic_write, is_storable, read_json, set_aside

log = logging.getLogger(__name__)

PHRASES_FILE = "phrases.json"
MAX_BYTES = 1 << 20
MAX_PHRASES = 500
MAX_LENGTH = 500  # characters of one phrase
MAX_USES = 10**9
# what a profile starts with in its language, before the user has stored any (the list is theirs to change)
STARTERS: dict[str, tuple[str, ...]] = {
    "en": ("Yes", "No", "Thank you", "Please wait, I am writing", "I need help", "I need the nurse",
           "I am in pain", "I am thirsty", "I love you"),
    "de": ("Ja", "Nein", "Danke", "Bitte warten, ich schreibe", "Ich brauche Hilfe", "Ich habe Schmerzen",
           "Ich habe Durst", "Ich liebe dich"),
    "fr": ("Oui", "Non", "Merci", "Attendez, j'écris", "J'ai besoin d'aide", "J'ai mal", "J'ai soif", "Je t'aime"),
    "es": ("Sí", "No", "Gracias", "Espera, estoy escribiendo", "Necesito ayuda", "Me duele", "Tengo sed",
           "Te quiero"),
}


class PhraseError(ValueError):
    """A phrase that cannot be stored (empty, too long, already there, the list full); the message says which."""


@dataclass
class Phrase:
    text: str
    uses: int = 0
    last_used: float = 0.0  # seconds since the epoch; 0: never

    def to_json(self) -> dict:
        return {"text": self.text, "uses": self.uses, "last_used": round(self.last_used, 3)}


def _phrase(entry: object) -> Phrase | None:
    """An entry of the file as a phrase, or None when it is not one."""
    if not isinstance(entry, dict):
        return None
    text, uses, last = entry.get("text"), entry.get("uses", 0), entry.get("last_used", 0.0)
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_LENGTH or not is_storable(text):
        return None
    if isinstance(uses, bool) or not isinstance(uses, int) or not 0 <= uses <= MAX_USES:
        return None
    if isinstance(last, bool) or not isinstance(last, int | float) or not (math.isfinite(last) and last >= 0):
        return None
    return Phrase(text, uses, float(last))


class PhraseList:
    """The phrases of the profile in ``folder``; ``language`` picks the starters of a profile without any."""

    def __init__(self, folder: str | Path, language: str = "en", phrases: list[Phrase] | None = None) -> None:
        """The list in ``folder`` as its file holds it, or ``phrases`` (not read: to be saved there)."""
        self.folder = Path(folder)
        self.path = self.folder / PHRASES_FILE
        self.skipped = 0  # entries of the file that were not phrases
        self.notice = ""  # what went wrong reading the file, for the user
        self._unreadable = False
        self.phrases: list[Phrase] = self._read(language) if phrases is None else list(phrases)

    def _read(self, language: str) -> list[Phrase]:
        try:
            data = read_json(self.path, MAX_BYTES)
        except FileNotFoundError:
            return [Phrase(text) for text in STARTERS.get(language.split("-")[0].split("_")[0], ())]
        except (OSError, ValueError) as exc:  # UnreadableFile, BadFile (not UTF-8, not JSON, nested too deeply)
            self._unreadable = True
            why = str(exc) if isinstance(exc, UnreadableFile | BadFile) else f"{self.path}: not a phrase list"
            self.notice = f"{why}; it is kept aside when a phrase is next stored"
            log.warning("%s", self.notice)
            return []
        entries = data.get("phrases") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            self._unreadable = True
            self.notice = f"{self.path}: not a phrase list; it is kept aside when a phrase is next stored"
            return []
        phrases: list[Phrase] = []
        seen: set[str] = set()
        for entry in entries[: MAX_PHRASES * 2]:
            phrase = _phrase(entry)
            if phrase is None or phrase.text in seen or len(phrases) >= MAX_PHRASES:
                self.skipped += 1
                continue
            seen.add(phrase.text)
            phrases.append(phrase)
        self.skipped += max(0, len(entries) - MAX_PHRASES * 2)
        if self.skipped:
            self.notice = f"{self.path}: {self.skipped} entries were not phrases and were left out"
        return phrases

    # -- reading ----------------------------------------------------------------------------------
    def ordered(self) -> list[Phrase]:
        """Most used first; among equals, the most recently used, then as stored."""
        return sorted(self.phrases, key=lambda p: (-p.uses, -p.last_used))

    def __len__(self) -> int:
        return len(self.phrases)

    def __contains__(self, text: object) -> bool:
        return any(p.text == text for p in self.phrases)

    # -- changing -----------------------------------------------------------------------------------
    def add(self, text: str, fold: Callable[[str], str] | None = None) -> Phrase:
        """Store ``text`` (stripped; ``fold``, e.g. ``lambda t: normalise(t, alphabet)``, maps it onto the writer's
        alphabet first) and save; PhraseError saying why it cannot be stored."""
        if fold is not None:
            text = fold(text)
        text = text.strip()
        if not text:
            raise PhraseError("there is nothing to store: write the phrase first")
        if not is_storable(text):
            raise PhraseError("a quick phrase cannot hold a lone surrogate or a NUL character")
        if len(text) > MAX_LENGTH:
            raise PhraseError(f"a quick phrase has at most {MAX_LENGTH} characters, this one {len(text)}")
        if text in self:
            raise PhraseError(f"{text!r} is already a quick phrase")
        if len(self.phrases) >= MAX_PHRASES:
            raise PhraseError(f"there are {MAX_PHRASES} quick phrases already: remove one first")
        phrase = Phrase(text)
        self.phrases.append(phrase)
        self.save()
        return phrase

    def remove(self, text: str) -> bool:
        """Forget the phrase ``text`` and save; whether there was one."""
        kept = [p for p in self.phrases if p.text != text]
        if len(kept) == len(self.phrases):
            return False
        self.phrases = kept
        self.save()
        return True

    def use(self, text: str, now: float | None = None) -> None:
        """The user said ``text`` through its box: count it and save (a phrase no longer stored is ignored)."""
        for phrase in self.phrases:
            if phrase.text == text:
                phrase.uses = min(phrase.uses + 1, MAX_USES)
                phrase.last_used = time.time() if now is None else now
                self.save()
                return

    def save(self) -> None:
        """Write the list (an unreadable file found when reading is set aside first, never overwritten)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._unreadable and self.path.exists():
            set_aside(self.path)
        self._unreadable = False
        data = {"format": 1, "phrases": [p.to_json() for p in self.phrases if is_storable(p.text)]}
        atomic_write(self.path, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"), private=True)


def copy_phrases(source: str | Path, destination: str | Path) -> None:
    """The phrases go with the profile on export and import: ``source``'s list, its entries checked, written into
    ``destination`` (nothing when ``source`` has none; one that cannot be read is not copied)."""
    if not (Path(source) / PHRASES_FILE).is_file():
        return
    phrases = PhraseList(source)
    if phrases.notice and not phrases.phrases:
        log.warning("not copied: %s", phrases.notice)
        return
    PhraseList(destination, phrases=phrases.phrases).save()
