"""`dasher-rnn profile`: list, reset, export or import the per-user profiles."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from dasher_rnn.cli.options import add_profiles_dir

if TYPE_CHECKING:
    from dasher_rnn.adapt.profiles import ProfileStore


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="list, reset, export or import per-user adapted profiles")
    p.add_argument("action", choices=["list", "reset", "export", "import"], help="what to do with the profiles")
    p.add_argument("args", nargs="*", help="reset NAME | export NAME FOLDER | import FOLDER NAME")
    add_profiles_dir(p)
    p.add_argument("--yes", action="store_true", help="reset: delete without asking; import: replace a profile of "
                   "the same name without asking (what the model learned about the person cannot be got back; "
                   "`profile export` keeps a copy first)")
    p.add_argument("--model-dir", default=None, help="import: the model folder the profile's RNN part was adapted "
                   "from, when it is not a shipped one (its parts are checked against this model's shapes)")
    p.set_defaults(func=run)


def _model_shapes(source: str, model_dir: str | None) -> tuple[dict | None, str | None]:
    """The shapes and base hash an imported profile's RNN part must have: the model it was adapted from (``model_dir``,
    else the shipped model whose weights it names), None when it has no RNN part; ProfileError when no model here
    is the one it was adapted from, or its settings are not ones the model adapts with."""
    from pathlib import Path

    from dasher_rnn.adapt.profile_files import ProfileError, read_info
    from dasher_rnn.adapt.session import expected_shapes
    from dasher_rnn.lm.model_io import ModelFileError, open_model
    from dasher_rnn.paths import MODELS_DIR

    info = read_info(Path(source))
    if info is None or "rnn" not in (info.get("files") or {}):
        return None, None  # no RNN part (or not a profile: import_ says which)
    wanted = info.get("base_model_hash")
    candidates = [Path(model_dir)] if model_dir else sorted(p.parent for p in MODELS_DIR.glob("*/config.json"))
    for candidate in candidates:
        try:
            folder = open_model(candidate)
        except (ModelFileError, OSError, ValueError):
            continue
        for view in (folder, *(folder.for_language(code) for code in folder.languages)):
            if view.base_hash == wanted:
                try:
                    return expected_shapes(view, info.get("adaptation")), wanted
                except (TypeError, ValueError) as exc:
                    raise ProfileError(f"{source}: its adaptation settings are not ones the model adapts with "
                                       f"({exc})") from None
    raise ProfileError(f"{source}: its RNN part was adapted from a model that is not here (base "
                       f"{str(wanted)[:12]}...): name that model's folder with --model-dir")


def _confirm_reset(store: ProfileStore, name: str, yes: bool) -> bool:
    """Whether to go on deleting profile ``name``: ``--yes``, or the user says so at the terminal. What it holds
    is said first, with how to keep a copy; without a terminal and without ``--yes`` nothing is deleted."""
    row = next((r for r in store.list() if r["name"] == name), None)
    if row is None:
        return True  # nothing to lose: reset says there is no such profile
    held = row.get("error") or f"{row['characters_adapted']:,} characters learned, last saved {row['updated'] or '?'}"
    print(f"profile {name!r} in {store.folder}: {held}")
    if yes:
        return True
    print(f"Deleting it forgets what the model learned about this person; `dasher-rnn profile export {name} FOLDER` "
          "keeps a copy first.")
    if not sys.stdin.isatty():
        print("not deleted: add --yes to delete without a question", file=sys.stderr)
        return False
    try:
        answer = input(f"Delete profile {name!r}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        print("not deleted")
        return False
    return True


def _confirm_import(store: ProfileStore, name: str, yes: bool) -> bool:
    """Whether to go on importing over profile ``name``: there is none, ``--yes``, or the user says so at the
    terminal. What the existing one holds is said first, with how to keep a copy; without a terminal and without
    ``--yes`` nothing is imported and the existing profile stays as it is."""
    if not store.path(name).exists():
        return True
    row = next((r for r in store.list() if r["name"] == name), None)
    held = "a profile folder" if row is None else row.get("error") or (
        f"{row['characters_adapted']:,} characters learned, last saved {row['updated'] or '?'}")
    print(f"profile {name!r} in {store.folder}: {held}")
    if yes:
        return True
    print(f"Importing over it replaces what the model learned about this person (and the record of progress) with "
          f"the imported copy; `dasher-rnn profile export {name} FOLDER` keeps a copy first, or import under "
          "another name.")
    if not sys.stdin.isatty():
        print(f"not imported: profile {name!r} exists; add --yes to replace it", file=sys.stderr)
        return False
    try:
        answer = input(f"Replace profile {name!r} with the imported one? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        print("not imported")
        return False
    return True


def run(args: argparse.Namespace) -> int:
    from dasher_rnn.adapt.profiles import ProfileStore, check_name

    store = ProfileStore(args.profiles_dir)
    needed = {"list": 0, "reset": 1, "export": 2, "import": 2}[args.action]
    if len(args.args) != needed:
        raise ValueError(f"profile {args.action} takes {needed} argument(s)")
    if args.action == "list":
        rows = store.list()
        print(f"profiles in {store.folder}:" if rows else f"no profiles in {store.folder}")
        for row in rows:
            print(f"  {row['name']}: " + ", ".join(f"{k} {v}" for k, v in row.items() if k != "name"))
    elif args.action == "reset":
        name = check_name(args.args[0])
        if not _confirm_reset(store, name, args.yes):
            return 1
        lock = store.lock(name)  # not while the app, the server or adapt has it open (it would save it back)
        try:
            removed = store.reset(name)
        finally:
            lock.release()
        print(f"profile {name!r} deleted" if removed else f"no profile named {name!r} in {store.folder}")
    elif args.action == "export":
        print(f"exported to {store.export(args.args[0], args.args[1])}")
    else:
        if not _confirm_import(store, check_name(args.args[1]), args.yes):
            return 1
        shapes, base_hash = _model_shapes(args.args[0], args.model_dir)
        print(f"imported as {store.import_(args.args[0], args.args[1], shapes, base_hash)}")
    return 0
