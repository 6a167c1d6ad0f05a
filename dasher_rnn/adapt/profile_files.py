"""A profile's folder on disk, read and checked: ``profile.json`` (``read_info``) and the part files it names, each
part's versions newest first (``_versions``), a part read within its bound and against its SHA-256 (``_read_part``),
the numbers of a part brought in from elsewhere (``_check_numbers``), the repairer that tries a part's versions in turn
(``_Repairer``), and the record of progress carried on export and import. ``ProfileStore`` (``profiles.py``) saves,
loads, exports and imports profiles over these.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from pathlib import Path

from dasher_rnn.files import MiB, atomic_write, read_bounded, read_json, set_aside

log = logging.getLogger("dasher_rnn.adapt.profiles")  # the profiles' log, as before the split

PROFILE_FORMAT = 2
PROFILE_FILE = "profile.json"
PARTS = ("rnn", "ppm")
LEGACY_PPM_FILE = "ppm.safetensors"  # format 1's hybrid state
PART_SUFFIX = ".safetensors"
MAX_INFO_BYTES = 1 << 20
MAX_PART_BYTES = 512 * MiB  # a part's file (the shipped RNN's weights are ~10 MB; PPM's counts grow with use)
PART_LABELS = {"rnn": "what the RNN learned", "ppm": "what PPM and the mixing weights learned"}


class ProfileError(ValueError):
    """A profile is corrupt, belongs to another base model, or cannot be written."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


__all__ = ["LEGACY_PPM_FILE", "MAX_INFO_BYTES", "MAX_PART_BYTES", "PARTS", "PART_LABELS", "PART_SUFFIX", "PROFILE_FILE",
           "PROFILE_FORMAT", "ProfileError", "read_info"]
