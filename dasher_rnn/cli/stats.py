"""`dasher-rnn stats`: a picture of a profile's recorded progress."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dasher_rnn.cli.options import add_profiles_dir, size


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="a picture of progress: characters per minute and bits per character per "
                                     "message, from a profile's record (nothing leaves this machine)")
    p.add_argument("--profile", default=None, help="the profile whose messages to draw (default: the app's, as its "
                                                   "settings name it: 'default' unless chosen in the Profile dialog)")
    p.add_argument("--out", default=None, help="the PNG file to write (default: a new file named by the profile and "
                                               "the time, in dasher-rnn/ in your documents folder, where the app's "
                                               "Save writes)")
    p.add_argument("--size", type=size, default="1200x800", help="the picture's WIDTHxHEIGHT in pixels")
    add_profiles_dir(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dasher_rnn.adapt.profile_files import ProfileError
    from dasher_rnn.adapt.profiles import ProfileStore
    from dasher_rnn.adapt.progress import ProgressLog
    from dasher_rnn.settings import SettingsStore

    if args.profile is None:  # the app's profile
        args.profile = SettingsStore().load().profile
    store = ProfileStore(args.profiles_dir)
    log = ProgressLog.for_profile(store, args.profile)
    if not log.folder.is_dir():
        raise ProfileError(f"no profile named {args.profile!r} in {store.folder}")
    records = log.read()
    if log.notice is not None:
        print(f"dasher-rnn stats: warning: {log.notice}", file=sys.stderr)
    if not records and log.notice is not None:
        print(f"dasher-rnn stats: profile {args.profile!r} has no record that can be read. No picture written.",
              file=sys.stderr)
        return 1
    if not records:
        print(f"dasher-rnn stats: profile {args.profile!r} has no recorded messages yet: the app records each "
              "message when it is finished (New message, Clear or closing the window). No picture written.",
              file=sys.stderr)
        return 1
    from dasher_rnn.ui.offscreen import _ensure_application
    from dasher_rnn.ui.stats_view import progress_title, render_progress, summary

    _ensure_application()  # offscreen: no display needed
    out = Path(args.out) if args.out else picture_path(args.profile)
    width, height = args.size
    if not render_progress(records, width, height, progress_title(args.profile)).save(str(out), "PNG"):
        raise OSError(f"could not write {out}")
    print(summary(records))
    print(f"wrote {out.absolute()} ({width}x{height})")
    return 0


def picture_path(profile: str, now: float | None = None) -> Path:
    """A new file in the documents folder (``ui/documents.py``: the folder the app's Save writes into), named by
    the profile and the local time as the Progress view's *Save the picture* names its copies; created here. A
    second picture within the same second gets ``-2``, ``-3``... rather than overwriting the first."""
    from dasher_rnn.ui.documents import documents_folder

    folder = documents_folder()
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"dasher-rnn-progress-{profile}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}"
    path, n = folder / f"{stem}.png", 2
    while path.exists():
        path, n = folder / f"{stem}-{n}.png", n + 1
    return path
