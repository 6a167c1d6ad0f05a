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
from dasher_rnn.adapt.profile_files import (
    MAX_PART_BYTES,
    PART_SUFFIX,
    PARTS,
    PROFILE_FILE,
    PROFILE_FORMAT,
    ProfileError,
    _check_numbers,
    _copy_progress,
    _expected_bytes,
    _files,
    _is_part_file,
    _no_link,
    _read_part,
    _read_parts,
    _read_progress,
    _Repairer,
    _sha256,
    _versions,
    _write_progress,
    read_info,
)
from dasher_rnn.files import BROKEN, atomic_write, is_temporary, set_aside

log = logging.getLogger(__name__)

ENV_VAR = "DASHER_RNN_PROFILES"
MAX_COUNT = 2**53  # characters adapted: exact in a float, far beyond a lifetime of writing
# 1 to 64 characters, then the language's code a language's profile adds (``compose.language_profile``: anna.sr-Latn)
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(?:\.[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,3})?\Z")
# names Windows keeps for devices, with or without an extension ("CON", "nul.de"): a profile must move between machines
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{d}{i}" for d in ("COM", "LPT") for i in range(10))}


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
