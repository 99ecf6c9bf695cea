"""Import and export for people in the console: the commands' own mechanism, two callers.

Export streams `exporting.jsonl_lines`, the lines `manage.py export_memories`
writes, limited to the projects the person sees. Import is two steps: an
upload is kept under the data folder and previewed (`importing.preview_records`,
the import's own checks, nothing written), then applied by
`importing.import_records`, the function `manage.py import_memories` calls,
into one project, copying rows of other projects (console/importing/copies.py);
the index worker applies its outbox jobs, as after `import_memories --no-index`.

Bad lines are reported and the good ones imported, as the command does: the
preview has shown the person every refused line with its number before they
chose to apply, and a file refused whole for one bad line of ten thousand would
send them to an editor to fix what the import already told them it skips.
"""

from __future__ import annotations

import re
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload

from console import exporting, importing, reading

MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # about 20,000 memories of a typical export
FORM_BYTES = 64 * 1024  # the form's own bytes around the file: boundaries, headers, token
KEEP_SECONDS = 24 * 3600  # an upload never applied is removed after a day
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{22}$")


class UploadRefused(ValueError):
    """The upload cannot be imported at all; the message says why, for a person."""


@dataclass(frozen=True, slots=True)
class Upload:
    token: str
    name: str  # the file's name as the person chose it, for the page


def _folder() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def export_filename(project: str | None, *, today: date) -> str:
    """`recall-<project>-<date>.jsonl`, or `recall-all-<date>` for everything seen."""
    return f"recall-{project or 'all'}-{today.isoformat()}.jsonl"


def export_lines(*, project: str | None, within: tuple[str, ...] | None) -> Iterator[bytes]:
    """The export's lines as UTF-8, one at a time: one project, or (project None)
    everything in `within` and the global items (`within` None: every project)."""
    for _, line in exporting.jsonl_lines(project=project, within=within):
        yield line.encode("utf-8")


def _over(size: float) -> str:
    return (
        f"is {size / 1_048_576:.1f} MB; the console imports files up to "
        f"{MAX_UPLOAD_BYTES // 1_048_576} MB (`manage.py import_memories` takes any size)"
    )


def announced_over(content_length: str | None) -> str | None:
    """Why a request announcing this body length is refused before a byte of it is read
    (None: it may come). The limit was checked on the file once the whole body had been
    received and kept in a temporary file: 200 MB sent took 200 MB of disk first."""
    try:
        length = int(content_length or 0)
    except ValueError:
        return None
    if length <= MAX_UPLOAD_BYTES + FORM_BYTES:
        return None
    return f"The upload {_over(length)}: nothing was read or kept."


class CappedUpload(FileUploadHandler):
    """Stops reading an upload once its file streams past MAX_UPLOAD_BYTES (a body
    sent without a length, or longer than it said): `refused` then says why, and the
    rest of the body is not read (the server drops it; nothing is kept). Installed
    ahead of Django's own handlers, so they never hold more than the limit."""

    def __init__(self, request: object = None) -> None:
        super().__init__(request)  # type: ignore[arg-type]
        self.received = 0
        self.refused: str | None = None

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > MAX_UPLOAD_BYTES:
            self.refused = (
                f"{self.file_name or 'The file'} is over {MAX_UPLOAD_BYTES // 1_048_576} MB: "
                "the console imports files up to that (`manage.py import_memories` takes any "
                "size); the rest of it was not read"
            )
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def upload_keep(file: UploadedFile[bytes]) -> Upload:
    """Keep an uploaded JSON-lines file for its preview and import; UploadRefused when
    it is over MAX_UPLOAD_BYTES, empty or not JSON lines by its name."""
    name = Path(file.name or "upload.jsonl").name
    size = file.size or 0
    if size > MAX_UPLOAD_BYTES:
        raise UploadRefused(f"{name} {_over(size)}")
    if not size:
        raise UploadRefused(f"{name} is empty: nothing to import")
    if Path(name).suffix.lower() not in (".jsonl", ".ndjson", ".json"):
        raise UploadRefused(
            f"{name} is not a JSON-lines file (.jsonl): the console imports the export's "
            "format; markdown folders go through `manage.py import_memories`"
        )
    _forget_stale()
    token = secrets.token_urlsafe(16)
    folder = _folder() / token
    folder.mkdir(parents=True)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-") or "upload.jsonl"
    with (folder / safe).open("wb") as fh:
        for chunk in file.chunks():
            fh.write(chunk)
    return Upload(token, safe)


def upload_find(token: str) -> Upload | None:
    """The kept upload of `token`, or None when it is gone (applied, or a day old)."""
    if not _TOKEN.match(token):
        return None
    files = sorted((_folder() / token).glob("*")) if (_folder() / token).is_dir() else []
    return Upload(token, files[0].name) if files else None


def import_preview(upload: Upload, *, project: str) -> importing.Preview:
    return importing.preview_records(_records(upload), project=project, copies=True)


def import_apply(upload: Upload, *, project: str) -> importing.ImportReport | None:
    """Import the upload into `project` as `import_memories --project --no-index` does,
    then forget it; None when another request has it already (a double click): the
    upload is claimed by renaming its folder, which one rename alone wins.

    Each batch commits its rows with their outbox jobs, and the index worker (which
    `make run` and `make serve` start) applies them: embedding in the request, as the
    command does, runs at 90 to 160 memories/s on two cores (docs/FIGURES.md), so a
    20 MB file would outlive gunicorn's 120 s timeout, which kills the worker between
    batches; writing the rows alone takes seconds.
    """
    claimed = _folder() / f"{upload.token}.applying"
    try:
        (_folder() / upload.token).rename(claimed)
    except FileNotFoundError:
        return None
    try:
        records = reading.read_records([claimed / upload.name])
        return importing.import_records(records, project=project, copies=True, index=False)
    finally:
        shutil.rmtree(claimed, ignore_errors=True)


def _records(upload: Upload) -> Iterator[reading.Record]:
    return reading.read_records([_folder() / upload.token / upload.name])


def _forget_stale() -> None:
    folder = _folder()
    if not folder.is_dir():
        return
    cutoff = time.time() - KEEP_SECONDS
    for kept in folder.iterdir():
        if kept.is_dir() and kept.stat().st_mtime < cutoff:
            shutil.rmtree(kept, ignore_errors=True)
