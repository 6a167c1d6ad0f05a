"""Special, oversized and out-of-range files in place of the files the app keeps besides a profile's model parts,
and of `adapt`'s input: what each reader and the command that reads it make of them. Prints JSON.

    python bench/special_files.py [--timeout 20] [--adapt-mb 100]

For a profile's ``progress.jsonl``, ``settings.json`` and the journal (``journal.json``) in turn, a FIFO, a link
to /dev/zero, an oversized file and a file with numbers out of range (an integer of 401 digits) are put in its
place in a fresh folder, and

- its reader runs in a child process (``ProgressLog.read`` then ``record``, ``SettingsStore.load``,
  ``Journal(...)``), which reports what it saw; the bench adds the seconds and the child's peak memory;
- the command that reads it runs, bounded by ``--timeout``: ``dasher-rnn stats`` for the progress file, the app
  (``dasher-rnn app --model ppm``, offscreen, closed by SIGTERM once its window is shown) for the settings and
  the journal, which it reads together, so one app run takes the same kind of fault in both; rc 0 is a clean
  close, saving the settings.

``adapt``'s input gets a FIFO, a link to /dev/zero and ``--adapt-mb`` of text (the audit's 100 MB), read by
``read_user_corpus`` and by ``dasher-rnn adapt --dry-run``: the last is stopped at ``--timeout`` (adapting to
ten million characters takes hours on a CPU); what matters is how soon it says what it read and left out.

Nothing is kept: every case runs in a temporary folder. A child that hangs or fills memory is killed at the
timeout (and, for memory, by an address-space limit of ``MEMORY_LIMIT``), and reported so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HUGE = "1" + "0" * 400
MEMORY_LIMIT = 4 << 30  # address space of each child: a reader that reads without end fails instead of the machine
APP_SECONDS = 15.0  # the app is asked to close a second after its window is shown, or after this long
KINDS = ("fifo", "dev-zero", "oversized", "out-of-range")
ROOT = Path(__file__).resolve().parent.parent


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(argv: list[str], timeout: float, env: dict | None = None, stop_after: float | None = None,
        ready: bytes = b"", said: tuple[str, ...] = ()) -> dict:
    """Run a child; its exit code, seconds, peak memory (MB), last lines of output (and those with any of ``said``
    in them, and how soon the first was seen), and whether it was killed at the timeout. ``stop_after``: SIGTERM
    a second after ``ready`` appears in the output, or after so many seconds (the app closes on it, saving)."""
    start = time.monotonic()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                             preexec_fn=_limit_memory, cwd=ROOT)
    os.set_blocking(child.stdout.fileno(), False)
    output, timed_out, stopped, usage, status, ready_at, said_at = b"", False, False, None, 0, None, None
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        output += child.stdout.read() or b""
        if pid:
            break
        elapsed = time.monotonic() - start
        if said and said_at is None and any(s.encode() in output for s in said):
            said_at = elapsed
        if ready and ready_at is None and ready in output:
            ready_at = elapsed
        if stop_after is not None and not stopped and (elapsed > stop_after or
                                                       (ready_at is not None and elapsed > ready_at + 1)):
            child.send_signal(signal.SIGTERM)
            stopped = True
        if elapsed > timeout:
            child.kill()
            timed_out = True
            _, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.05)
    output += child.stdout.read() or b""
    child.returncode = os.waitstatus_to_exitcode(status)
    lines = [line for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    result = {"rc": child.returncode, "seconds": round(time.monotonic() - start, 2),
              "peak_mb": round(usage.ru_maxrss / 1024, 1), "timed_out": timed_out, "tail": lines[-3:]}
    if said:
        result["said"] = [line[-300:] for line in lines if any(s in line for s in said)]
        result["first_said_s"] = None if said_at is None else round(said_at, 2)  # how soon the user was told
    return result


def reader(code: str, timeout: float) -> dict:
    """Run ``code`` (which prints one JSON line last) in a child; that line, with the child's figures."""
    result = run([sys.executable, "-c", textwrap.dedent(code)], timeout)
    try:
        result["saw"] = json.loads(result["tail"][-1])
        del result["tail"]
    except (IndexError, ValueError):
        pass
    return result


def repeated(head: bytes, chunk: bytes, size: int, tail: bytes = b"") -> tuple[bytes, bytes, int, bytes]:
    """An oversized file's content: ``head``, then ``chunk`` again and again to ``size`` bytes, then ``tail``.
    Written a chunk at a time, so this process stays small (a child forked from it counts its memory)."""
    return head, chunk, size, tail


def fill(kind: str, path: Path, oversized: tuple[bytes, bytes, int, bytes], out_of_range: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "oversized":
        head, chunk, size, tail = oversized
        with open(path, "wb") as f:
            f.write(head)
            for _ in range(size // len(chunk) + 1):
                f.write(chunk)
            f.write(tail)
    else:
        path.write_bytes(out_of_range)


def progress_line(i: int) -> bytes:
    return json.dumps({"time": f"2026-01-01T10:{i % 60:02d}:00+0000", "characters": 20 + i % 7, "seconds": 30.5,
                       "bits": 50.25, "corrections": i % 3, "speed_bps": 1.5}).encode() + b"\n"


def progress_cases(folder: Path, timeout: float) -> dict:
    lines = b"".join(progress_line(i) for i in range(1000))
    results = {}
    sizes = {"oversized": 65 << 20, "oversized-9MiB": 9 << 20}  # past the read bound; past the old 8 MiB one
    for kind in (*KINDS, "oversized-9MiB"):
        profiles = folder / f"progress-{kind}"
        path = profiles / "me" / "progress.jsonl"
        big = repeated(b"", lines, sizes.get(kind, 0))
        fill(kind.split("-9")[0], path, big, lines + f'{{"characters": 5, "seconds": {HUGE}, "bits": 1}}\n'.encode())
        code = f"""
            import json
            from dasher_rnn.adapt.progress import MessageRecord, ProgressLog
            log = ProgressLog({str(path.parent)!r})
            records = log.read()
            before = {{"records": len(records), "messages": sum(r.messages for r in records), "notice": log.notice}}
            log.record(MessageRecord("2026-02-01T10:00:00+0000", 7, 9.0, 20.0, 0))
            after = log.read()
            print(json.dumps({{"read": before, "record_notice": log.notice, "after_record": {{
                "records": len(after), "messages": sum(r.messages for r in after), "bytes": log.path.stat().st_size,
                "set_aside": sorted(p.name for p in log.folder.glob("progress.jsonl.broken-*"))}}}}))
        """
        stats_out = folder / f"stats-{kind}.png"
        fill(kind.split("-9")[0], profiles / "cli" / "progress.jsonl", big,
             lines + f'{{"characters": 5, "seconds": {HUGE}, "bits": 1}}\n'.encode())
        results[kind] = {"reader": reader(code, timeout),
                         "stats": run([sys.executable, "-m", "dasher_rnn.cli", "stats", "--profile", "cli",
                                       "--profiles-dir", str(profiles), "--out", str(stats_out)], timeout,
                                      {"QT_QPA_PLATFORM": "offscreen"})}
    return results


def app_files(kind: str, settings: Path, journal: Path) -> None:
    """The same fault in the settings and the journal (made again for the app when the reader set them aside)."""
    for path in (settings, journal):
        if path.is_symlink() or path.exists():
            path.unlink()
    as_kind = kind if kind != "lone-surrogate" else "out-of-range"
    fill(as_kind, settings, repeated(b'{"font_size": 20, "pad": "', b"x" * 4096, 2 << 20, b'"}'),
         f'{{"font_size": {HUGE}, "speed_bps": {HUGE}, "colour_scheme": "high-contrast"}}'.encode()
         if kind != "lone-surrogate" else b'{"font_size": 20}')
    fill(as_kind, journal, repeated(b'{"format": 1, "saved": false, "text": "', b"x" * 4096, 65 << 20, b'"}'),
         json.dumps({"format": 1, "text": "Call me \ud800 soon", "saved": False, "updated": "today"}).encode()
         if kind == "lone-surrogate" else f'{{"format": {HUGE}, "text": "hi", "saved": false}}'.encode())


def settings_and_journal_cases(folder: Path, timeout: float) -> dict:
    results = {}
    for kind in (*KINDS, "lone-surrogate"):
        case = folder / f"app-{kind}"
        settings, journal = case / "settings.json", case / "journal.json"
        app_files(kind, settings, journal)
        code = f"""
            import json
            from dasher_rnn.journal import Journal
            from dasher_rnn.settings import SettingsStore
            store = SettingsStore({str(settings)!r})
            prefs = store.load()
            journal = Journal({str(journal)!r})
            pending = journal.pending
            print(json.dumps({{"settings": {{"font_size": prefs.font_size, "notice": store.notice}},
                              "journal": {{"notice": journal.notice, "pending": pending and pending.text[:40],
                                          "repaired": pending and pending.repaired}}}}))
        """
        in_process = reader(code, timeout)
        app_files(kind, settings, journal)
        env = {"QT_QPA_PLATFORM": "offscreen", "DASHER_RNN_JOURNAL": str(journal),
               "DASHER_RNN_PROFILES": str(case / "profiles")}
        app = run([sys.executable, "-m", "dasher_rnn.cli", "app", "--model", "ppm", "--settings", str(settings)],
                  timeout, env, stop_after=APP_SECONDS, ready=b"propagateSizeHints",  # the window is shown
                  said=("settings", "journal"))
        app["tail"] = [line for line in app["tail"] if "propagateSizeHints" not in line]
        app["after"] = {p.name: "regular file" if p.is_file() and not p.is_symlink() else
                        "link" if p.is_symlink() else "FIFO" if p.exists() else "none" for p in (settings, journal)}
        results[kind] = {"reader": in_process, "app": app}
    return results


def adapt_cases(folder: Path, timeout: float, megabytes: int) -> dict:
    results = {}
    line = b"We went to the market on Saturday and bought apples, bread and a little cheese.\n"
    for kind in ("fifo", "dev-zero", "oversized"):
        path = folder / f"adapt-{kind}" / "writing.txt"
        fill(kind, path, repeated(b"", line * 1000, megabytes * 1_000_000), b"")
        code = f"""
            import json
            from dasher_rnn.adapt.user_corpus import read_user_corpus
            docs, report = read_user_corpus([{str(path)!r}])
            print(json.dumps({{"characters": report.characters, "unreadable": report.unreadable,
                              "left_out": report.left_out}}))
        """
        cli = run([sys.executable, "-m", "dasher_rnn.cli", "adapt", str(path), "--profile", "bench", "--profiles-dir",
                   str(folder / "adapt-profiles"), "--dry-run", "--threads", "1"], timeout,
                  said=("warning", "read ", "error"))
        cli["tail"] = [t[-120:] for t in cli["tail"]]
        results[kind] = {"reader": reader(code, timeout), "adapt": cli}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a child is killed")
    parser.add_argument("--adapt-mb", type=int, default=100, help="megabytes of text for adapt's oversized input")
    args = parser.parse_args()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="special-files-") as tmp:
        folder = Path(tmp)
        with ThreadPoolExecutor(3) as pool:  # the three groups side by side: each child is bounded on its own
            progress = pool.submit(progress_cases, folder, args.timeout)
            app = pool.submit(settings_and_journal_cases, folder, args.timeout)
            adapt = pool.submit(adapt_cases, folder, args.timeout, args.adapt_mb)
            report = {"progress.jsonl": progress.result(), "settings.json + journal.json": app.result(),
                      "adapt input": adapt.result()}
    report["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
