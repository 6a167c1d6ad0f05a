"""Per-user profiles on disk: everything a Writer learned about one person, saved together.

A profile is a folder ``<profiles>/<name>/`` holding ``profile.json`` and the files it names, one per
*part*: ``rnn`` (the adapted RNN parameters, or the state adapter's) and ``ppm`` (the hybrid's PPM
counts and its mixing weights), each a safetensors file named with the save's time stamp. A save
writes the new part files, then replaces ``profile.json`` atomically; a part the save does not bring
is carried over from the current version. The previous version's files stay until the save after
next, so a kill at any moment leaves a loadable profile, and anything else in the folder (a part file
of a killed save, a temporary file) is removed by the next save. Files are readable by the user only.
Nothing is ever unpickled, every file is read with ``files.read_bounded`` (a regular file within a size bound)
and checked against its recorded SHA-256 before use, and every number read is range-checked.

A profile is repaired part by part (``ProfileStore.load(name, repair=True)``, as the Writer loads one): a part
that cannot be used (missing, not a regular file, too large, not matching its SHA-256, or refused by the model
that reads it through ``LoadedProfile.reject``) is set aside alone with ``files.set_aside`` and the part's
previous version is tried; a bad count or step scale in ``profile.json`` is reset, the weights kept; an entry of its
``files`` that names no part's file is passed over alone. An unusable ``profile.json`` (not JSON, nested too deeply,
not a profile) is set aside alone, and each part's newest files in the folder are tried in its place: without their
recorded SHA-256 the model that reads them checks them (its shapes, finite numbers), and the count of characters
starts again. The other parts and the record of progress stay, and ``LoadedProfile.notices`` says what was lost.

Beside the parts, ``progress.jsonl`` (``adapt/progress.py``) records how each message was written; it is
appended to by the app, not versioned, and goes with the profile on export and import; so do the quick phrases
(``phrases.json``, ``adapt/phrases.py``).

Format 1 (before parts: ``weights_file`` and an unversioned ``ppm.safetensors``) is read and becomes
format 2 at the next save. The profiles folder is the platformdirs user data folder, overridable by
``DASHER_RNN_PROFILES`` or an explicit path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs
from filelock import FileLock, Timeout

from dasher_rnn import __version__
from dasher_rnn.adapt.phrases import copy_phrases
from dasher_rnn.files import BROKEN, MiB, atomic_write, is_temporary, read_bounded, read_json, set_aside

log = logging.getLogger(__name__)

PROFILE_FORMAT = 2
PROFILE_FILE = "profile.json"
PARTS = ("rnn", "ppm")
LEGACY_PPM_FILE = "ppm.safetensors"  # format 1's hybrid state
ENV_VAR = "DASHER_RNN_PROFILES"
PART_SUFFIX = ".safetensors"
MAX_INFO_BYTES = 1 << 20
MAX_PART_BYTES = 512 * MiB  # a part's file (the shipped RNN's weights are ~10 MB; PPM's counts grow with use)
MAX_COUNT = 2**53  # characters adapted: exact in a float, far beyond a lifetime of writing
PART_LABELS = {"rnn": "what the RNN learned", "ppm": "what PPM and the mixing weights learned"}
# 1 to 64 characters, then the language's code a language's profile adds (``compose.language_profile``: anna.sr-Latn)
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(?:\.[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,3})?\Z")
# names Windows keeps for devices, with or without an extension ("CON", "nul.de"): a profile must move between machines
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{d}{i}" for d in ("COM", "LPT") for i in range(10))}


class ProfileError(ValueError):
    """A profile is corrupt, belongs to another base model, or cannot be written."""


class ProfileInUse(ProfileError):
    """Another program (the app, the server, ``dasher-rnn adapt``) has the profile open."""


_LOCKS: dict[str, FileLock] = {}  # one lock object per profile in this process: taking it again nests


def profiles_dir(override: str | Path | None = None) -> Path:
    folder = Path(override or os.environ.get(ENV_VAR) or Path(platformdirs.user_data_dir("dasher-rnn")) / "profiles")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _is_name(name: object) -> bool:
    return isinstance(name, str) and bool(_NAME.match(name)) and not name.endswith(".") \
        and name.split(".")[0].upper() not in _RESERVED


def check_name(name: str) -> str:
    """``name`` when it can name a profile folder on every system (Windows included), else ``ProfileError``."""
    if not _is_name(name):
        raise ProfileError(f"invalid profile name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-' (and a "
                           "language's code after a '.'), "
                           "starting with a letter or digit and not ending with '.', and not a name Windows keeps "
                           "for a device (CON, PRN, AUX, NUL, COM0-9, LPT0-9)")
    return name


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count(info: dict, key: str) -> int:
    value = info.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_COUNT:
        raise ProfileError(f"{key} = {str(value)[:40]!r} is not a count of characters")
    return value


def _step_scale(info: dict) -> float:
    value = info.get("step_scale", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 < value <= 1:
        raise ProfileError(f"step_scale = {str(value)[:40]!r} is not a number in (0, 1]")
    return float(value)


@dataclass
class LoadedProfile:
    """A profile's metadata and the bytes of each part it has (checked against their SHA-256); ``notices``: what
    a repairing load set aside and what was lost (empty when nothing was)."""

    name: str
    info: dict
    parts: dict[str, bytes]
    notices: list[str] = field(default_factory=list)
    _next_version: Callable[[str, str], bytes | None] | None = field(default=None, repr=False, compare=False)

    @property
    def characters_adapted(self) -> int:
        return _count(self.info, "characters_adapted")

    @property
    def step_scale(self) -> float:
        return _step_scale(self.info)

    def reject(self, part: str, reason: str) -> bytes | None:
        """The model reading ``part`` refused its bytes (``reason``: another base model, a shape that does not fit,
        non-finite numbers...). Loaded with repair: the part's file is set aside and its previous version, when it
        reads, is the part now (returned), else the part is gone (None); ``notices`` says which. Loaded without:
        ``ProfileError(reason)``."""
        if self._next_version is None:
            raise ProfileError(reason)
        data = self._next_version(part, reason)
        if data is None:
            self.parts.pop(part, None)
        else:
            self.parts[part] = data
        return data


class ProfileStore:
    def __init__(self, folder: str | Path | None = None):
        self.folder = profiles_dir(folder)

    def path(self, name: str) -> Path:
        return self.folder / check_name(name)

    def lock(self, name: str) -> FileLock:
        """Hold the profile for this process until ``release()``, so no two programs save over each other's
        learning (a lost update). Taken again in this process, it nests. ``ProfileInUse`` when another
        process holds it; the operating system frees it when the holder exits, however it exits."""
        path = str(self.folder / f".{check_name(name)}.lock")
        lock = _LOCKS.setdefault(path, FileLock(path, timeout=0, thread_local=False))
        try:
            lock.acquire()
        except Timeout:
            raise ProfileInUse(f"profile {name!r} is open in another program (the app, the server or "
                               "`dasher-rnn adapt`): close it there first") from None
        return lock

    def exists(self, name: str) -> bool:
        return (self.path(name) / PROFILE_FILE).is_file()

    def list(self) -> list[dict]:
        rows = []
        for d in sorted(p for p in self.folder.iterdir() if p.is_dir() and _is_name(p.name) and BROKEN not in p.name):
            try:
                info = read_info(d)
                if info is None:
                    continue
                rows.append({"name": d.name, "characters_adapted": _count(info, "characters_adapted"),
                             "parts": ",".join(sorted(_files(d, info, strict=False))),
                             "updated": str(info.get("updated", ""))[:40],
                             "base_model": str(info.get("base_model_hash") or "")[:12]})
            except ProfileError as exc:
                rows.append({"name": d.name, "error": str(exc)})
        return rows

    # -- saving ------------------------------------------------------------------------
    def save(self, name: str, parts: dict[str, bytes], info: dict, base_model_hash: str | None = None) -> Path:
        """Write a new version with ``parts`` (safetensors bytes by part name); parts not given are carried
        over from the current version, which stays on disk as the previous one."""
        unknown = set(parts) - set(PARTS)
        if unknown:
            raise ValueError(f"unknown profile parts {sorted(unknown)}")
        try:
            return self._save(name, parts, info, base_model_hash)
        except OSError as exc:  # a full disk, a read-only folder...: the version on disk stays as it was
            raise ProfileError(f"could not save profile {name!r} in {self.folder} ({exc.strerror or exc}); "
                               "its previous version is kept") from None

    def _save(self, name: str, parts: dict[str, bytes], info: dict, base_model_hash: str | None) -> Path:
        folder = self.path(name)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            old = read_info(folder)
            current = _files(folder, old, strict=False) if old else {}
        except ProfileError:
            old, current = None, {}  # a broken profile.json is replaced by this version
        stamp = f"{time.time_ns():x}"
        files = {k: v for k, v in current.items() if k not in parts}
        for part, data in parts.items():
            file = f"{part}-{stamp}{PART_SUFFIX}"
            atomic_write(folder / file, data, private=True)
            files[part] = {"file": file, "sha256": _sha256(data)}
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        record = {
            **{k: v for k, v in info.items() if k not in ("files", "previous", "weights_file", "weights_sha256")},
            "format": PROFILE_FORMAT,
            "program_version": __version__,
            "base_model_hash": base_model_hash if "rnn" in parts else (old or {}).get("base_model_hash"),
            "files": files,
            "previous": {"files": current} if current else None,
            "created": (old or {}).get("created", now),
            "updated": now,
        }
        atomic_write(folder / PROFILE_FILE, (json.dumps(record, indent=2) + "\n").encode(), private=True)
        keep = {PROFILE_FILE} | {f["file"] for f in files.values()} | {f["file"] for f in current.values()}
        ours = tuple(f".{name}" for name in (PROFILE_FILE, *(f"{part}-" for part in PARTS)))
        for f in folder.iterdir():  # a killed save's files; never another writer's (progress.jsonl's temporary file)
            if f.name not in keep and f.is_file() and (f.suffix == PART_SUFFIX or is_temporary(f) and f.name.startswith(ours)):
                f.unlink(missing_ok=True)
        return folder

    # -- loading -----------------------------------------------------------------------
    def load(self, name: str, repair: bool = False) -> LoadedProfile | None:
        """The profile's current version, or None if there is none. Without ``repair``, ``ProfileError`` if any of
        it is unusable. With ``repair`` (the Writer's load) it never raises for what is on disk: each unusable part
        is set aside alone and its previous version tried, a bad number reset, an unusable ``profile.json`` set
        aside with the part files; the rest is kept, and the returned profile's ``notices`` say what was lost."""
        folder = self.path(name)
        try:
            info = read_info(folder)
        except ProfileError as exc:
            if not repair:
                raise
            return self._without_info(name, folder, exc)
        if info is None:
            return None
        if not repair:
            loaded = LoadedProfile(name, info, _read_parts(folder, info))
            loaded.characters_adapted, loaded.step_scale  # noqa: B018 -- checked now, not at first use
            return loaded
        passed_over: list[str] = []
        try:
            versions = _versions(folder, info, passed_over)
        except ProfileError as exc:  # 'files' is not a table at all: the part files are found without it
            return self._without_info(name, folder, exc)
        repairer = _Repairer(name, folder, versions)
        for problem in passed_over:
            repairer.say(f"{problem}: passed over (the other parts are used)")
        loaded = LoadedProfile(name, info, {}, repairer.notices, repairer.next_version)
        for part in versions:
            data = repairer.first_version(part)
            if data is not None:
                loaded.parts[part] = data
        checks = (("characters_adapted", 0, lambda: _count(info, "characters_adapted")),
                  ("step_scale", 1.0, lambda: _step_scale(info)))
        for key, default, check in checks:
            try:
                check()
            except ProfileError as exc:
                info[key] = default
                repairer.say(f"profile {name!r}: {exc}; {key} starts again from {default} (what was learned is kept)")
        return loaded

    def _without_info(self, name: str, folder: Path, problem: ProfileError) -> LoadedProfile:
        """A profile whose ``profile.json`` cannot be used: it is set aside alone, and each part's newest files in
        the folder are tried in its place (the model that reads them checks them; ``info['recovered']``), so one bad
        file never costs every part."""
        if not folder.is_dir():
            return LoadedProfile(name, {}, {}, [self._set_aside_info(name, folder, problem)])
        try:
            moved = f"set aside as {set_aside(folder / PROFILE_FILE).name}"
        except OSError as exc:
            moved = f"left where it is ({exc.strerror or exc})"
        found: dict[str, list[tuple[int, str]]] = {}
        for f in folder.iterdir():
            part, _, stamp = f.name.removesuffix(PART_SUFFIX).partition("-")
            if part in PARTS and _is_part_file(f.name) and re.fullmatch(r"[0-9a-f]{1,32}", stamp):
                found.setdefault(part, []).append((int(stamp, 16), f.name))
        versions = {part: [{"file": file, "sha256": None} for _, file in sorted(files, reverse=True)[:2]]
                    for part, files in found.items()}
        repairer = _Repairer(name, folder, versions)
        repairer.say(f"profile {name!r}: {problem}; it was {moved}, and each part's newest file is tried without it "
                     "(the count of characters learned starts again)")
        loaded = LoadedProfile(name, {"format": PROFILE_FORMAT, "recovered": True}, {}, repairer.notices,
                               repairer.next_version)
        for part in versions:
            data = repairer.first_version(part)
            if data is not None:
                loaded.parts[part] = data
        if loaded.parts:  # a profile.json naming what was found, so the next start finds it too (not afresh)
            now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            loaded.info["files"] = {part: {"file": versions[part][repairer.used[part]]["file"], "sha256": _sha256(data)}
                                    for part, data in loaded.parts.items()}
            loaded.info.update({"previous": None, "created": now, "updated": now, "program_version": __version__})
            try:
                atomic_write(folder / PROFILE_FILE, (json.dumps(loaded.info, indent=2) + "\n").encode(), private=True)
            except OSError as exc:
                log.warning("could not write %s: %s", folder / PROFILE_FILE, exc)
        return loaded

    def _set_aside_info(self, name: str, folder: Path, problem: ProfileError) -> str:
        """An unusable ``profile.json`` goes aside, and with it the part files it may name (they cannot be checked
        without it); the record of progress stays. What happened, for the user."""
        try:
            try:
                moved = [set_aside(folder / PROFILE_FILE)]
                moved += [set_aside(f) for f in sorted(folder.iterdir()) if f.suffix == PART_SUFFIX]
            except NotADirectoryError:
                moved = [self.set_aside(name)]  # the profile's name is a file, not a folder
            where = f"set aside as {', '.join(m.name for m in moved)} in {moved[0].parent}"
        except OSError as exc:  # a read-only folder: the next save replaces it, if it can
            where = f"left where it is (it could not be set aside: {exc.strerror or exc})"
        notice = f"profile {name!r} could not be used ({problem}); what the model learned was {where} and starts afresh"
        log.warning("%s", notice)
        return notice

    def set_aside(self, name: str) -> Path:
        """Move a broken profile out of the way (kept for inspection) so the base model can be used."""
        return set_aside(self.path(name))

    def reset(self, name: str) -> bool:
        """Delete a profile; whether there was one."""
        folder = self.path(name)
        if not folder.exists():
            return False
        shutil.rmtree(folder)
        return True

    # -- moving between machines -------------------------------------------------------------
    def export(self, name: str, destination: str | Path) -> Path:
        """Copy the current version of a profile, every part, into a folder (for backup or another machine)."""
        loaded = self.load(name)
        if loaded is None:
            raise ProfileError(f"no profile named {name!r} in {self.folder}")
        out = Path(destination)
        out.mkdir(parents=True, exist_ok=True)
        files = _files(self.path(name), loaded.info)
        for part, data in loaded.parts.items():
            atomic_write(out / files[part]["file"], data, private=True)
        record = {**loaded.info, "format": PROFILE_FORMAT, "files": files, "previous": None}
        for key in ("weights_file", "weights_sha256"):
            record.pop(key, None)
        _copy_progress(self.path(name), out)
        copy_phrases(self.path(name), out)
        atomic_write(out / PROFILE_FILE, (json.dumps(record, indent=2) + "\n").encode(), private=True)
        return out

    def import_(self, source: str | Path, name: str, shapes: dict[str, tuple[int, ...]] | None = None,
                base_hash: str | None = None) -> Path:
        """Install an exported profile under ``name``. Everything is checked before anything changes: refused
        (``ProfileError``) unless every file is a regular file in the folder (no symbolic link, which could bring in
        a file from anywhere) within its bound, every part has a SHA-256 and matches it, reads as safetensors with
        finite numbers and, given the model's ``shapes`` and ``base_hash`` (``session.expected_shapes``), has the
        model's names and shapes (a larger file than those shapes need is not read), every number is in range, and
        no other program holds the profile (``ProfileInUse``: its holder would save over it). The record of progress
        and the quick phrases come with it, checked (lines and entries that are not records or phrases are left out)."""
        from dasher_rnn.adapt.phrases import PHRASES_FILE, PhraseList
        from dasher_rnn.adapt.progress import PROGRESS_FILE

        source = Path(source)
        lock = self.lock(name)
        try:
            for file in (PROFILE_FILE, PROGRESS_FILE, PHRASES_FILE):
                _no_link(source / file)
            info = read_info(source)
            if info is None:
                raise ProfileError(f"{source}: no {PROFILE_FILE} here")
            files = _files(source, info)
            parts: dict[str, bytes] = {}
            for part, entry in files.items():
                _no_link(source / entry["file"])
                if not isinstance(entry.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]):
                    raise ProfileError(f"{source / PROFILE_FILE}: the {part} part has no SHA-256 (an exported profile "
                                       "records one for every part)")
                limit = _expected_bytes(shapes) if part == "rnn" and shapes is not None else MAX_PART_BYTES
                parts[part] = _read_part(source, entry, limit)
            if "rnn" in parts and not isinstance(info.get("base_model_hash"), str):
                raise ProfileError(f"{source / PROFILE_FILE}: no base_model_hash for the RNN weights")
            loaded = LoadedProfile(name, info, parts)
            loaded.characters_adapted, loaded.step_scale  # noqa: B018 -- refuse what would fail to load
            for part, data in parts.items():
                _check_numbers(source, part, data)
            if "rnn" in parts and shapes is not None:
                decode_weights(loaded, shapes, base_hash or "")  # the model's names and shapes, or ProfileError
            records = _read_progress(source)
            phrases = PhraseList(source, phrases=None) if (source / PHRASES_FILE).is_file() else None
            if phrases is not None and phrases.notice and not phrases.phrases:
                log.warning("not imported: %s", phrases.notice)
                phrases = None
            folder = self.save(name, parts, info, info.get("base_model_hash"))
            if records is not None:
                _write_progress(folder, records)
            if phrases is not None:
                PhraseList(folder, phrases=phrases.phrases).save()
            return folder
        finally:
            lock.release()


def _no_link(path: Path) -> None:
    """An imported profile's file is its folder's own: ``ProfileError`` for a symbolic link."""
    if path.is_symlink():
        raise ProfileError(f"{path} is a symbolic link: an exported profile's files are the folder's own; refused")


def _expected_bytes(shapes: dict[str, tuple[int, ...]]) -> int:
    """The most bytes an ``rnn`` part of a model with ``shapes`` can take: every parameter in float32, and room for
    the safetensors header."""
    return sum(4 * math.prod(shape) for shape in shapes.values()) + MiB


class _Repairer:
    """The versions of each part a profile names, newest first, tried in turn as the newer ones turn out unusable."""

    def __init__(self, name: str, folder: Path, versions: dict[str, list[dict]]):
        self.name, self.folder, self.versions = name, folder, versions
        self.used: dict[str, int] = {}  # part -> the index of the version in use
        self.notices: list[str] = []

    def say(self, notice: str) -> None:
        log.warning("%s", notice)
        self.notices.append(notice)

    def first_version(self, part: str) -> bytes | None:
        return self._from(part, 0, [])

    def next_version(self, part: str, reason: str) -> bytes | None:
        index = self.used.get(part)
        if index is None:
            return None
        return self._from(part, index + 1, [(self.versions[part][index], reason)])

    def _from(self, part: str, start: int, failed: list[tuple[dict, str]]) -> bytes | None:
        """The first version from ``start`` on that reads (the ones that do not are set aside), with a notice
        when any failed: which, and what was lost."""
        versions = self.versions[part]
        for index in range(start, len(versions)):
            try:
                data = _read_part(self.folder, versions[index])
            except ProfileError as exc:
                failed.append((versions[index], str(exc)))
                continue
            self.used[part] = index
            break
        else:
            data = None
            self.used.pop(part, None)
        if failed:
            moved = [self._set_aside(entry) for entry, _ in failed]
            what = "; ".join(reason if str(entry["file"]) in reason else f"{entry['file']}: {reason}"
                             for entry, reason in failed)
            kept = ", kept as " + ", ".join(m for m in moved if m) if any(moved) else ""
            outcome = ("its previous version is used: what was learned since that save is lost" if data is not None
                       else "no earlier version could be used: it starts afresh")
            self.say(f"profile {self.name!r}: {PART_LABELS[part]} could not be used ({what}){kept}; {outcome}")
        return data

    def _set_aside(self, entry: dict) -> str | None:
        file = entry.get("file")
        if not isinstance(file, str) or not _is_part_file(file) or not os.path.lexists(self.folder / file):
            return None
        try:
            return set_aside(self.folder / file).name
        except OSError as exc:
            log.warning("could not set aside %s: %s", self.folder / file, exc)
            return None


def _copy_progress(source: Path, destination: Path) -> None:
    """The record of progress (``adapt/progress.py``) goes with the profile when it is exported or imported."""
    records = _read_progress(source)
    if records is not None:
        _write_progress(destination, records)


def _read_progress(source: Path) -> list | None:
    """The records of ``source``'s progress file, its lines checked (None when it has none); ``ProfileError`` when
    the file cannot be read (not a regular file, larger than progress's bound)."""
    from dasher_rnn.adapt.progress import MAX_READ_BYTES, PROGRESS_FILE, ProgressLog

    path = source / PROGRESS_FILE
    try:
        read_bounded(path, MAX_READ_BYTES)  # refused here, before the record's own reader sees it
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return ProgressLog(source).read()


def _write_progress(folder: Path, records: list) -> None:
    from dasher_rnn.adapt.progress import PROGRESS_FILE

    atomic_write(folder / PROGRESS_FILE, b"".join(r.to_line() for r in records), private=True)


def read_info(folder: Path) -> dict | None:
    """A profile folder's ``profile.json``, or None when there is none; ``ProfileError`` when it is unusable (not a
    regular file, larger than ``MAX_INFO_BYTES``, not JSON, not a profile)."""
    path = folder / PROFILE_FILE
    try:
        info = read_json(path, MAX_INFO_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # UnreadableFile, BadFile (not UTF-8, not JSON, nested too deeply)
        raise ProfileError(f"{path}: unreadable ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(info, dict) or info.get("format") not in (1, PROFILE_FORMAT):
        raise ProfileError(f"{path}: not a profile of format 1 or {PROFILE_FORMAT}")
    return info


def _files(folder: Path, info: dict, strict: bool = True, passed_over: list[str] | None = None) -> dict[str, dict]:
    """Part name -> {"file", "sha256"} of a version (format 1 mapped onto parts); ``ProfileError`` for an entry
    that does not name a part's file in the folder, or, not ``strict``, the entry is left out (and said in
    ``passed_over``)."""
    files: object
    if info.get("format") == 1:
        legacy: dict[str, dict] = {}
        if info.get("weights_file"):
            legacy["rnn"] = {"file": info.get("weights_file"), "sha256": info.get("weights_sha256")}
        if (folder / LEGACY_PPM_FILE).is_file():
            legacy["ppm"] = {"file": LEGACY_PPM_FILE, "sha256": None}  # format 1 kept no hash for it
        files = legacy
    else:
        files = info.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise ProfileError(f"{folder / PROFILE_FILE}: 'files' is not a table of parts")
    good = {}
    for part, entry in files.items():
        sha = entry.get("sha256")
        if part not in PARTS or not _is_part_file(entry.get("file")) or not (sha is None or isinstance(sha, str)):
            problem = f"{folder / PROFILE_FILE}: bad entry for part {str(part)[:40]!r}"
            if strict:
                raise ProfileError(problem)
            if passed_over is not None:
                passed_over.append(problem)
            continue
        good[part] = entry
    return good


def _versions(folder: Path, info: dict, passed_over: list[str] | None = None) -> dict[str, list[dict]]:
    """Each part's versions, newest first: the current one, then the previous one when it is another file (an
    entry that names no part's file is left out, and said in ``passed_over``)."""
    versions = {part: [entry] for part, entry in _files(folder, info, strict=False, passed_over=passed_over).items()}
    previous = info.get("previous")
    if info.get("format") == 1 and isinstance(previous, dict) and previous.get("weights_file"):
        previous = {"files": {"rnn": {"file": previous.get("weights_file"), "sha256": previous.get("weights_sha256")}}}
    try:
        older = _files(folder, {"files": previous.get("files")}, strict=False) if isinstance(previous, dict) else {}
    except ProfileError:
        older = {}  # a damaged record of the previous version: only the current one can be tried
    for part, entry in older.items():
        if part in versions and entry["file"] != versions[part][0]["file"]:
            versions[part].append(entry)
    return versions


def _is_part_file(file: object) -> bool:
    """A name a part's file may have: a file of the profile's own folder, ``*.safetensors``, not hidden."""
    return isinstance(file, str) and Path(file).name == file and not file.startswith(".") \
        and file.endswith(PART_SUFFIX) and "/" not in file and "\\" not in file


def _read_part(folder: Path, entry: dict, limit: int = MAX_PART_BYTES) -> bytes:
    file = entry["file"]
    try:
        data = read_bounded(folder / file, limit)
    except OSError as exc:
        raise ProfileError(f"{folder / file}: cannot be read ({exc.strerror or exc})") from None
    if entry.get("sha256") is not None and _sha256(data) != entry.get("sha256"):
        raise ProfileError(f"{folder / file}: does not match its recorded SHA-256")
    return data


def _read_parts(folder: Path, info: dict) -> dict[str, bytes]:
    return {part: _read_part(folder, entry) for part, entry in _files(folder, info).items()}


def _check_numbers(folder: Path, part: str, data: bytes) -> None:
    """A part brought in from elsewhere reads as safetensors, its numbers finite, PPM's counts positive and its
    mixing weights in (0, 1) (the model that reads it checks the rest when it is loaded)."""
    import numpy as np
    from safetensors.numpy import load

    try:
        arrays = load(data)
    except Exception as exc:  # safetensors raises several types for a broken file
        raise ProfileError(f"{folder}: the {part} part is not a readable safetensors file ({exc})") from None
    for key, array in arrays.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ProfileError(f"{folder}: the {part} part's {key} holds non-finite numbers")
    if part == "ppm":
        from dasher_rnn.lm.ppm import MAX_COUNT as MAX_PPM_COUNT

        counts, gate = arrays.get("counts"), arrays.get("gate")
        if counts is None or gate is None or ((counts <= 0) | (counts > MAX_PPM_COUNT)).any() \
                or ((gate <= 0) | (gate >= 1)).any():
            raise ProfileError(f"{folder}: the ppm part's counts are not in 1..{MAX_PPM_COUNT} or its mixing weights "
                               "not in (0, 1)")


# -- the RNN part: adapted parameters as safetensors (torch is imported only here) ------------------
def encode_weights(tensors: dict) -> bytes:
    """The ``rnn`` part's bytes for adapted parameters (torch tensors or numpy arrays: the same file, float32 as
    they are); refuses non-finite weights, which must never be saved."""
    import numpy as np
    from safetensors.numpy import save

    arrays = {k: np.ascontiguousarray(v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v))
              for k, v in tensors.items()}
    bad = [k for k, v in arrays.items() if not bool(np.isfinite(v).all())]
    if bad:
        raise ProfileError(f"refusing to save non-finite adapted weights ({', '.join(bad[:3])})")
    return save(arrays)


def decode_weights(loaded: LoadedProfile, shapes: dict[str, tuple[int, ...]], base_hash: str) -> dict:
    """The ``rnn`` part's tensors as numpy arrays, checked to belong to the base model ``base_hash``, to fit
    ``shapes`` and to be finite."""
    import numpy as np
    from safetensors.numpy import load

    recovered = loaded.info.get("recovered") is True and loaded.info.get("base_model_hash") is None
    if loaded.info.get("base_model_hash") != base_hash and not recovered:  # (recovered: only the shapes can tell)
        raise ProfileError(f"profile {loaded.name!r} was adapted from another base model "
                           f"({str(loaded.info.get('base_model_hash'))[:12]}..., this one is {base_hash[:12]}...)")

    try:
        weights = load(loaded.parts["rnn"])
    except Exception as exc:  # safetensors raises several types for a broken file
        raise ProfileError(f"profile {loaded.name!r}: the RNN weights are not a readable safetensors file ({exc})") from None
    for key, tensor in weights.items():
        if key not in shapes or tuple(tensor.shape) != tuple(shapes[key]):
            raise ProfileError(f"profile {loaded.name!r}: tensor {key} {tuple(tensor.shape)} does not fit the model")
        if not bool(np.isfinite(tensor).all()):
            raise ProfileError(f"profile {loaded.name!r}: tensor {key} holds non-finite numbers")
    return weights
