"""Per-user adapted weights on disk.

A profile is a folder ``<profiles>/<name>/`` holding ``profile.json`` (base-model hash, versions,
characters adapted, timestamps, adaptation settings, and which weights file is current and which
previous) and the weights files it names (safetensors, adapted parameters only). Saving writes the
new weights file, then replaces ``profile.json`` atomically (temporary file, fsync, rename); the
previous weights stay until the save after next, so a crash at any point leaves a loadable
profile. Files are readable by the user only. Nothing is ever unpickled.

The profiles folder is the platformdirs user data folder, overridable by ``DASHER_RNN_PROFILES``
or an explicit path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import torch

from dasher_rnn import __version__
from dasher_rnn.lm.model_io import ModelFileError, atomic_write_bytes, load_tensors, save_tensors, sha256_file

PROFILE_FORMAT = 1
PROFILE_FILE = "profile.json"
ENV_VAR = "DASHER_RNN_PROFILES"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ProfileError(ValueError):
    """A profile is corrupt, belongs to another base model, or cannot be written."""


def profiles_dir(override: str | Path | None = None) -> Path:
    folder = Path(override or os.environ.get(ENV_VAR) or Path(platformdirs.user_data_dir("dasher-rnn")) / "profiles")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ProfileError(f"invalid profile name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
    return name


@dataclass
class LoadedProfile:
    weights: dict[str, torch.Tensor]
    info: dict


class ProfileStore:
    def __init__(self, folder: str | Path | None = None):
        self.folder = profiles_dir(folder)

    def path(self, name: str) -> Path:
        return self.folder / check_name(name)

    def list(self) -> list[dict]:
        rows = []
        for d in sorted(p for p in self.folder.iterdir() if p.is_dir() and _NAME.match(p.name)):
            try:
                info = json.loads((d / PROFILE_FILE).read_text())
                rows.append({"name": d.name, "characters_adapted": info.get("characters_adapted"),
                             "updated": info.get("updated"), "base_model": info.get("base_model_hash", "")[:12]})
            except (OSError, ValueError):
                rows.append({"name": d.name, "error": "unreadable profile.json"})
        return rows

    def save(self, name: str, weights: dict[str, torch.Tensor], base_model_hash: str, info: dict) -> Path:
        """Write a new version of the profile; the previous version stays on disk."""
        folder = self.path(name)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        old = self.read_info(folder)
        stamp = f"{time.time_ns():x}"
        weights_file = folder / f"weights-{stamp}.safetensors"
        save_tensors(weights_file, weights)
        os.chmod(weights_file, 0o600)
        with open(weights_file, "rb") as f:
            os.fsync(f.fileno())
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        record = {
            **info,
            "format": PROFILE_FORMAT,
            "program_version": __version__,
            "base_model_hash": base_model_hash,
            "weights_file": weights_file.name,
            "weights_sha256": sha256_file(weights_file),
            "previous": {k: old[k] for k in ("weights_file", "weights_sha256") if old and k in old} or None,
            "created": (old or {}).get("created", now),
            "updated": now,
        }
        atomic_write_bytes(folder / PROFILE_FILE, (json.dumps(record, indent=2) + "\n").encode())
        os.chmod(folder / PROFILE_FILE, 0o600)
        keep = {record["weights_file"], (record["previous"] or {}).get("weights_file")}
        for f in folder.glob("weights-*.safetensors"):
            if f.name not in keep:
                f.unlink(missing_ok=True)
        return folder

    def load(self, name: str, base_model_hash: str, shapes: dict[str, tuple[int, ...]]) -> LoadedProfile | None:
        """The profile's weights, or None if there is none. Raises ``ProfileError`` if it is unusable."""
        folder = self.path(name)
        info = self.read_info(folder)
        if info is None:
            return None
        if info.get("base_model_hash") != base_model_hash:
            raise ProfileError(f"{folder / PROFILE_FILE}: adapted from another base model "
                               f"({str(info.get('base_model_hash'))[:12]}..., this one is {base_model_hash[:12]}...)")
        weights_file = folder / str(info.get("weights_file"))
        if not weights_file.is_file() or sha256_file(weights_file) != info.get("weights_sha256"):
            raise ProfileError(f"{weights_file}: missing or does not match its recorded SHA-256")
        try:
            weights = load_tensors(weights_file)
        except ModelFileError as exc:
            raise ProfileError(str(exc)) from None
        for key, tensor in weights.items():
            if key not in shapes or tuple(tensor.shape) != tuple(shapes[key]):
                raise ProfileError(f"{weights_file}: tensor {key} {tuple(tensor.shape)} does not fit the model")
        return LoadedProfile(weights, info)

    def load_into(self, name: str, model, base_model_hash: str) -> dict | None:
        """Copy a profile's adapted weights into ``model``; returns its info, or None if there is no profile."""
        params = model.network_parameters()
        loaded = self.load(name, base_model_hash, {n: tuple(p.shape) for n, p in params.items()})
        if loaded is None:
            return None
        with torch.no_grad():
            for n, tensor in loaded.weights.items():
                params[n].copy_(tensor)
        return loaded.info

    def set_aside(self, name: str) -> Path:
        """Move a broken profile out of the way (kept for inspection) so the base model can be used."""
        folder = self.path(name)
        target = folder.with_name(f"{folder.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
        folder.rename(target)
        return target

    def reset(self, name: str) -> None:
        shutil.rmtree(self.path(name), ignore_errors=True)

    def export(self, name: str, destination: str | Path) -> Path:
        """Copy the current version of a profile to a folder (for backup or another machine)."""
        folder = self.path(name)
        info = self.read_info(folder)
        if info is None:
            raise ProfileError(f"no profile named {name!r} in {self.folder}")
        out = Path(destination)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(folder / info["weights_file"], out / info["weights_file"])
        atomic_write_bytes(out / PROFILE_FILE, json.dumps({**info, "previous": None}, indent=2).encode())
        return out

    def import_(self, source: str | Path, name: str) -> Path:
        """Install an exported profile under ``name`` (checked when it is loaded)."""
        source = Path(source)
        info = self.read_info(source)
        if info is None:
            raise ProfileError(f"{source}: no {PROFILE_FILE} here")
        weights = source / str(info.get("weights_file"))
        if not weights.is_file() or sha256_file(weights) != info.get("weights_sha256"):
            raise ProfileError(f"{weights}: missing or does not match its recorded SHA-256")
        tensors = load_tensors(weights)
        return self.save(name, tensors, info["base_model_hash"],
                         {k: v for k, v in info.items() if k not in ("weights_file", "weights_sha256", "previous")})

    @staticmethod
    def read_info(folder: Path) -> dict | None:
        path = folder / PROFILE_FILE
        if not path.is_file():
            return None
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ProfileError(f"{path}: unreadable ({exc})") from None
        if not isinstance(info, dict) or info.get("format") != PROFILE_FORMAT:
            raise ProfileError(f"{path}: not a profile of format {PROFILE_FORMAT}")
        return info
