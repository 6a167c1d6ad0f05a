"""Reading a user's own writing: plain text, Markdown, mbox and .eml files, folders of them.

Email bodies keep only the plain-text part the person wrote: quoted replies, "On ... wrote:"
headers, forwarded originals and signatures are dropped. Binary files are skipped, non-UTF-8
text is decoded with replacement, exact duplicate documents are dropped; all of it is reported.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import mailbox
import re
from dataclasses import dataclass, field
from pathlib import Path

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

    def to_json(self) -> dict:
        return {"files": self.files, "documents": self.documents, "skipped_binary": self.skipped_binary,
                "decoded_with_replacement": self.replaced_bytes, "unreadable": self.unreadable,
                "duplicates_dropped": self.duplicates}


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


def _decode(data: bytes, path: Path, report: ReadReport) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        report.replaced_bytes[str(path)] = text.count("\ufffd")
        return text


def _is_mbox(path: Path, head: bytes) -> bool:
    return path.suffix.lower() == ".mbox" or head.startswith(b"From ")


def read_user_corpus(paths: list[str | Path]) -> tuple[list[Document], ReadReport]:
    report = ReadReport()
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            report.unreadable[str(p)] = "no such file or folder"
    documents: list[Document] = []
    seen: set[bytes] = set()

    def add(source: str, text: str) -> None:
        text = text.strip()
        if not text:
            return
        digest = hashlib.sha1(text.encode()).digest()
        if digest in seen:
            report.duplicates += 1
            return
        seen.add(digest)
        documents.append(Document(source, text))

    for path in files:
        try:
            data = path.read_bytes()
        except OSError as exc:
            report.unreadable[str(path)] = exc.strerror or str(exc)
            continue
        report.files += 1
        if _is_mbox(path, data[:5]):
            try:
                for i, message in enumerate(mailbox.mbox(str(path), create=False)):
                    parsed = email.message_from_bytes(message.as_bytes(), policy=email.policy.default)
                    add(f"{path}#{i}", email_body(parsed))
            except (OSError, mailbox.Error) as exc:
                report.unreadable[str(path)] = str(exc)
        elif path.suffix.lower() == ".eml":
            add(str(path), email_body(email.message_from_bytes(data, policy=email.policy.default)))
        elif b"\x00" in data[:65536]:
            report.skipped_binary.append(str(path))
        else:
            add(str(path), _decode(data, path, report))
    report.documents = len(documents)
    return documents, report
