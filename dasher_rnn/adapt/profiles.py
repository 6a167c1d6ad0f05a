"""Per-user profiles on disk: everything a Writer learned about one person, saved together.

A profile is a folder ``<profiles>/<name>/`` holding ``profile.json`` and the files it names, one per
*part*: ``rnn`` (the adapted RNN parameters, or the state adapter's) and ``ppm`` (the hybrid's PPM
counts and its mixing weights), each a safetensors file named with the save's time stamp. A save
writes the new part files, then replaces ``profile.json`` atomically; a part the save does not bring
is carried over from the current version. The previous version's files stay until the save after
next, so a kill at any moment leaves a loadable profile, and anything else in the folder (a part file
of a killed save, a temporary file) is removed by the next save. Files are readable by the user only.
Nothing is ever unpickled, and every file is checked against its recorded SHA-256 before use.

Beside the parts, ``progress.jsonl`` (``adapt/progress.py``) records how each message was written; it is
appended to by the app, not versioned, and goes with the profile on export and import.

Format 1 (before parts: ``weights_file`` and an unversioned ``ppm.safetensors``) is read and becomes
format 2 at the next save. The profiles folder is the platformdirs user data folder, overridable by
``DASHER_RNN_PROFILES`` or an explicit path.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from filelock import FileLock, Timeout

from dasher_rnn import __version__
from dasher_rnn.files import BROKEN, atomic_write, is_temporary, set_aside

PROFILE_FORMAT = 2
PROFILE_FILE = "profile.json"
PARTS = ("rnn", "ppm")
LEGACY_PPM_FILE = "ppm.safetensors"  # format 1's hybrid state
ENV_VAR = "DASHER_RNN_PROFILES"
MAX_INFO_BYTES = 1 << 20
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")


class ProfileError(ValueError):
    """A profile is corrupt, belongs to another base model, or cannot be written."""


class ProfileInUse(ProfileError):
    """Another program (the app, the server, ``dasher-rnn adapt``) has the profile open."""


_LOCKS: dict[str, FileLock] = {}  # one lock object per profile in this process: taking it again nests


def profiles_dir(override: str | Path | None = None) -> Path:
    folder = Path(override or os.environ.get(ENV_VAR) or Path(platformdirs.user_data_dir("dasher-rnn")) / "profiles")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProfileError(f"invalid profile name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
                           "starting with a letter or digit")
    return name


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count(info: dict, key: str) -> int:
    value = info.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        raise ProfileError(f"{key} = {str(value)[:40]!r} is not a count of characters")
    return value


@dataclass
class LoadedProfile:
    """A profile's metadata and the bytes of each part it has (checked against their SHA-256)."""

    name: str
    info: dict
    parts: dict[str, bytes]

    @property
    def characters_adapted(self) -> int:
        return _count(self.info, "characters_adapted")

    @property
    def step_scale(self) -> float:
        value = self.info.get("step_scale", 1.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 < value <= 1:
            raise ProfileError(f"step_scale = {str(value)[:40]!r} is not a number in (0, 1]")
        return float(value)


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
        for d in sorted(p for p in self.folder.iterdir() if p.is_dir() and _NAME.match(p.name) and BROKEN not in p.name):
            try:
                info = read_info(d)
                if info is None:
                    continue
                rows.append({"name": d.name, "characters_adapted": _count(info, "characters_adapted"),
                             "parts": ",".join(sorted(_files(d, info))), "updated": str(info.get("updated", "")),
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
        except ProfileError:
            old = None  # a broken profile.json is replaced by this version
        current = _files(folder, old) if old else {}
        stamp = f"{time.time_ns():x}"
        files = {k: v for k, v in current.items() if k not in parts}
        for part, data in parts.items():
            file = f"{part}-{stamp}.safetensors"
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
        for f in folder.iterdir():
            if f.name not in keep and f.is_file() and (is_temporary(f) or f.suffix == ".safetensors"):
                f.unlink(missing_ok=True)
        return folder

    # -- loading -----------------------------------------------------------------------
    def load(self, name: str) -> LoadedProfile | None:
        """The profile's current version, or None if there is none. Raises ``ProfileError`` if it is unusable."""
        folder = self.path(name)
        info = read_info(folder)
        if info is None:
            return None
        loaded = LoadedProfile(name, info, _read_parts(folder, info))
        loaded.characters_adapted, loaded.step_scale  # noqa: B018 -- checked now, not at first use
        return loaded

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
        atomic_write(out / PROFILE_FILE, (json.dumps(record, indent=2) + "\n").encode(), private=True)
        return out

    def import_(self, source: str | Path, name: str) -> Path:
        """Install an exported profile under ``name``, every part checked against its SHA-256."""
        source = Path(source)
        info = read_info(source)
        if info is None:
            raise ProfileError(f"{source}: no {PROFILE_FILE} here")
        parts = _read_parts(source, info)
        if "rnn" in parts and not isinstance(info.get("base_model_hash"), str):
            raise ProfileError(f"{source / PROFILE_FILE}: no base_model_hash for the RNN weights")
        LoadedProfile(name, info, parts).step_scale  # noqa: B018 -- refuse what would fail to load
        folder = self.save(name, parts, info, info.get("base_model_hash"))
        _copy_progress(source, folder)
        return folder


def _copy_progress(source: Path, destination: Path) -> None:
    """The record of progress (``adapt/progress.py``) goes with the profile when it is exported or imported."""
    from dasher_rnn.adapt.progress import PROGRESS_FILE

    if (source / PROGRESS_FILE).is_file():
        atomic_write(destination / PROGRESS_FILE, (source / PROGRESS_FILE).read_bytes(), private=True)


def read_info(folder: Path) -> dict | None:
    """A profile folder's ``profile.json``, or None when there is none; ``ProfileError`` when it is unusable."""
    path = folder / PROFILE_FILE
    if not path.exists():
        return None
    try:
        if path.stat().st_size > MAX_INFO_BYTES:
            raise ValueError(f"larger than {MAX_INFO_BYTES} bytes")
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad UTF-8, JSON or numbers
        raise ProfileError(f"{path}: unreadable ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(info, dict) or info.get("format") not in (1, PROFILE_FORMAT):
        raise ProfileError(f"{path}: not a profile of format 1 or {PROFILE_FORMAT}")
    return info


def _files(folder: Path, info: dict) -> dict[str, dict]:
    """Part name -> {"file", "sha256"} of a version (format 1 mapped onto parts)."""
    if info.get("format") == 1:
        legacy: dict[str, dict] = {}
        if info.get("weights_file"):
            legacy["rnn"] = {"file": info.get("weights_file"), "sha256": info.get("weights_sha256")}
        if (folder / LEGACY_PPM_FILE).is_file():
            legacy["ppm"] = {"file": LEGACY_PPM_FILE, "sha256": None}  # format 1 kept no hash for it
        return legacy
    files = info.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise ProfileError(f"{folder / PROFILE_FILE}: 'files' is not a table of parts")
    return files


def _read_parts(folder: Path, info: dict) -> dict[str, bytes]:
    parts = {}
    for part, entry in _files(folder, info).items():
        file = entry.get("file")
        if part not in PARTS or not isinstance(file, str) or Path(file).name != file or file.startswith("."):
            raise ProfileError(f"{folder / PROFILE_FILE}: bad entry for part {part!r}")
        try:
            data = (folder / file).read_bytes()
        except OSError as exc:
            raise ProfileError(f"{folder / file}: cannot be read ({exc.strerror or exc})") from None
        if entry.get("sha256") is not None and _sha256(data) != entry.get("sha256"):
            raise ProfileError(f"{folder / file}: does not match its recorded SHA-256")
        parts[part] = data
    return parts


# -- the RNN part: adapted parameters as safetensors (torch is imported only here) ------------------
def encode_weights(tensors: dict) -> bytes:
    """The ``rnn`` part's bytes for adapted parameters; refuses non-finite weights, which must never be saved."""
    import torch
    from safetensors.torch import save

    bad = [k for k, v in tensors.items() if not bool(torch.isfinite(v).all())]
    if bad:
        raise ProfileError(f"refusing to save non-finite adapted weights ({', '.join(bad[:3])})")
    return save({k: v.detach().contiguous().cpu() for k, v in tensors.items()})


def decode_weights(loaded: LoadedProfile, shapes: dict[str, tuple[int, ...]], base_hash: str) -> dict:
    """The ``rnn`` part's tensors, checked to belong to the base model ``base_hash``, to fit ``shapes`` and
    to be finite."""
    import torch
    from safetensors.torch import load

    if loaded.info.get("base_model_hash") != base_hash:
        raise ProfileError(f"profile {loaded.name!r} was adapted from another base model "
                           f"({str(loaded.info.get('base_model_hash'))[:12]}..., this one is {base_hash[:12]}...)")

    try:
        weights = load(loaded.parts["rnn"])
    except Exception as exc:  # safetensors raises several types for a broken file
        raise ProfileError(f"profile {loaded.name!r}: the RNN weights are not a readable safetensors file ({exc})") from None
    for key, tensor in weights.items():
        if key not in shapes or tuple(tensor.shape) != tuple(shapes[key]):
            raise ProfileError(f"profile {loaded.name!r}: tensor {key} {tuple(tensor.shape)} does not fit the model")
        if not bool(torch.isfinite(tensor).all()):
            raise ProfileError(f"profile {loaded.name!r}: tensor {key} holds non-finite numbers")
    return weights
