"""Reading a user's own writing: plain text, Markdown, mbox and .eml files, folders of them.

Email bodies keep only the plain-text part the person wrote: quoted replies, "On ... wrote:"
headers, forwarded originals and signatures are dropped. Binary files are skipped, non-UTF-8
text is decoded with replacement, exact duplicate documents are dropped; all of it is reported.

Reading is bounded: each file is read with ``files.read_bounded`` (a regular file of at most
``MAX_FILE_BYTES``; a FIFO or a device named is refused at once, one inside a folder passed over), and
at most ``max_chars`` characters of writing are kept (``MAX_CHARS`` by default, which already takes
hours to adapt to on a CPU): the files after that are left out, and the report says how many.
"""

from __future__ import annotations

import codecs
import email
import email.policy
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from dasher_rnn.files import MiB, read_bounded

MAX_FILE_BYTES = 256 * MiB  # one file (a mailbox with its attachments): read whole, so bounded
MAX_CHARS = 10_000_000  # characters of writing kept: years of someone's messages

_REPLY_HEADER = re.compile(r"^(On .{3,200} wrote:|-{2,}\s*Original Message\s*-{2,}|-{2,}\s*Forwarded message\s*-{2,})\s*$",
                           re.IGNORECASE)


@dataclass
class Document:
    source: str  # the file (and message number inside a mailbox)
    text: str


@dataclass
class ReadReport:
    files: int = 0
    documents: int = 0
    skipped_binary: list[str] = field(default_factory=list)
    replaced_bytes: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    duplicates: int = 0
    characters: int = 0  # of writing kept
    left_out: list[str] = field(default_factory=list)  # files (or "file#message") past ``max_chars``, in part or whole

    def to_json(self) -> dict:
        return {"files": self.files, "documents": self.documents, "skipped_binary": self.skipped_binary,
                "decoded_with_replacement": self.replaced_bytes, "unreadable": self.unreadable,
                "duplicates_dropped": self.duplicates, "characters": self.characters, "left_out": len(self.left_out)}


def strip_email_text(body: str) -> str:
    """The part of an email body the sender wrote: no quoted lines, quoted replies or signature."""
    kept = []
    for line in body.splitlines():
        if line.rstrip() in ("--", "-- ") or _REPLY_HEADER.match(line.strip()):
            break
        if line.lstrip().startswith(">"):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def email_body(message: email.message.EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    if part is None:
        return ""
    try:
        return strip_email_text(part.get_content())
    except (LookupError, ValueError):  # unknown charset or broken encoding
        payload = part.get_payload(decode=True)  # bytes, or None where there is nothing to decode
        data = payload if isinstance(payload, bytes) else b""
        return strip_email_text(data.decode("utf-8", errors="replace"))


def _decode(data: bytes, path: Path, report: ReadReport, most: int) -> str:
    """At most ``most`` characters of ``data`` as text (only the bytes they need are decoded)."""
    head = data[: 4 * most + 4]  # a character is at most 4 bytes (and 3 more of a byte-order mark)
    final = len(head) == len(data)
    try:
        return codecs.getincrementaldecoder("utf-8-sig")().decode(head, final)[:most]
    except UnicodeDecodeError:
        text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(head, final)[:most]
        report.replaced_bytes[str(path)] = text.count("\ufffd")
        return text


def _is_mbox(path: Path, head: bytes) -> bool:
    return path.suffix.lower() == ".mbox" or head.startswith(b"From ")


_MBOX_FROM = re.compile(rb"(?:\A|(?<=\n\n)|(?<=\r\n\r\n))From ")  # a "From " line after a blank line starts a message


def mbox_messages(data: bytes) -> Iterator[bytes]:
    """The messages of an mbox file's bytes, each without its "From " line (as ``mailbox.mbox`` reads them)."""
    starts = [m.start() for m in _MBOX_FROM.finditer(data)]
    for start, end in zip(starts, [*starts[1:], len(data)], strict=True):
        line_end = data.find(b"\n", start, end)
        yield data[line_end + 1: end] if line_end >= 0 else b""


def read_user_corpus(paths: list[str | Path], max_chars: int = MAX_CHARS,
                     progress: bool = False) -> tuple[list[Document], ReadReport]:
    """The documents in ``paths`` (files, or folders of them), at most ``max_chars`` characters in all, and what
    happened to each file; ``progress``: a bar of the bytes read on stderr."""
    report = ReadReport()
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file()))  # regular files (or links to them)
        elif p.exists():
            files.append(p)  # a FIFO or a device named here is refused by read_bounded, saying what it is
        else:
            report.unreadable[str(p)] = "no such file or folder"
    documents: list[Document] = []
    seen: set[bytes] = set()

    def add(source: str, text: str) -> None:
        text = text.strip()
        if not text:
            return
        digest = hashlib.sha1(text.encode("utf-8", "replace")).digest()
        if digest in seen:
            report.duplicates += 1
            return
        seen.add(digest)
        documents.append(Document(source, text))
        report.characters += len(text)

    def room() -> int:
        return max_chars - report.characters

    sizes = []
    for path in files:
        try:
            sizes.append(min(path.stat().st_size, MAX_FILE_BYTES))
        except OSError:
            sizes.append(0)
    with tqdm(total=sum(sizes), unit="B", unit_scale=True, desc="reading", disable=not progress, leave=False) as bar:
        for path, size in zip(files, sizes, strict=True):
            bar.update(size)
            if room() <= 0:
                report.left_out.append(str(path))
                continue
            try:
                data = read_bounded(path, MAX_FILE_BYTES)
            except OSError as exc:
                report.unreadable[str(path)] = exc.strerror or str(exc)
                continue
            report.files += 1
            if _is_mbox(path, data[:5]):
                for i, message in enumerate(mbox_messages(data)):
                    if room() <= 0:
                        report.left_out.append(f"{path}#{i}")
                        break
                    add(f"{path}#{i}", email_body(email.message_from_bytes(message, policy=email.policy.default))[:room()])
            elif path.suffix.lower() == ".eml":
                add(str(path), email_body(email.message_from_bytes(data, policy=email.policy.default))[:room()])
            elif b"\x00" in data[:65536]:
                report.skipped_binary.append(str(path))
            else:
                text = _decode(data, path, report, room())
                if len(text) == room() and len(data) > len(text.encode("utf-8", "replace")):
                    report.left_out.append(f"{path} (in part)")
                add(str(path), text)
    report.documents = len(documents)
    return documents, report
