"""Writes. Every write commits its row and its IndexJob in one transaction.

Named `<entity>_<action>`, keyword-only, one module per area; this package
exports them all, so callers write `services.memory_create(...)`.
Validation errors are Django `ValidationError`s with messages a person can
act on; nothing is half-written.
"""

from console.services.admin_writes import (
    memories_delete,
    memory_admin_save,
    note_admin_save,
    notes_delete,
    project_admin_save,
    projects_delete,
)
from console.services.associations import (
    association_delete,
    association_write,
    associations_carry,
    link_refusal,
)
from console.services.curation import favorite_toggle, setting_reset, setting_save
from console.services.digests import (
    MAX_DIGEST_CHARS,
    digest_edit,
    digest_rebuild,
    digest_request,
    digest_stamp,
)
from console.services.events import memory_read_record, retrieval_record
from console.services.expiry import Expired, memories_expire, memories_expired
from console.services.feedback import PackForbidden, Verdict, feedback_record
from console.services.memories import (
    MAX_BODY_CHARS,
    MAX_TAGS,
    MEMORY_FIELDS,
    StateConflict,
    content_hash,
    memory_archive,
    memory_create,
    memory_delete,
    memory_links_rewrite,
    memory_mark_accessed,
    memory_new,
    memory_restore,
    memory_supersede,
    memory_update,
    memory_validate,
    name_check,
    session_next,
    tags_clean,
)
from console.services.notes import NOTE_FIELDS, note_create, note_delete, note_update, slugify_name
from console.services.planes import (
    bulk_mode,
    digest_sync,
    index_maintain,
    index_rebuild,
    index_repair,
    index_sync,
    index_writer_kept,
    index_writer_let_go,
    plane_set_aside,
)
from console.services.projects import (
    project_create,
    project_create_for_token,
    project_get_or_create,
    project_set_isolation,
)
from console.services.writes import (
    BATCH_MAX,
    BatchError,
    IdempotencyConflict,
    Outcome,
    idempotent,
    memory_write,
    memory_write_batch,
)

__all__ = [
    "MAX_DIGEST_CHARS",
    "digest_edit",
    "digest_rebuild",
    "digest_request",
    "digest_stamp",
    "digest_sync",
    "association_delete",
    "association_write",
    "associations_carry",
    "link_refusal",
    "BATCH_MAX",
    "MAX_BODY_CHARS",
    "MAX_TAGS",
    "MEMORY_FIELDS",
    "NOTE_FIELDS",
    "BatchError",
    "StateConflict",
    "IdempotencyConflict",
    "Outcome",
    "bulk_mode",
    "content_hash",
    "favorite_toggle",
    "idempotent",
    "index_maintain",
    "index_rebuild",
    "index_repair",
    "index_sync",
    "plane_set_aside",
    "index_writer_kept",
    "index_writer_let_go",
    "memories_delete",
    "memory_admin_save",
    "note_admin_save",
    "notes_delete",
    "project_admin_save",
    "projects_delete",
    "memory_archive",
    "memory_create",
    "memory_delete",
    "memory_links_rewrite",
    "memory_mark_accessed",
    "memory_new",
    "memory_read_record",
    "feedback_record",
    "Expired",
    "memories_expire",
    "memories_expired",
    "PackForbidden",
    "Verdict",
    "memory_restore",
    "memory_supersede",
    "memory_update",
    "memory_validate",
    "memory_write",
    "memory_write_batch",
    "name_check",
    "note_create",
    "note_delete",
    "note_update",
    "project_create",
    "project_create_for_token",
    "project_get_or_create",
    "project_set_isolation",
    "retrieval_record",
    "session_next",
    "setting_reset",
    "setting_save",
    "slugify_name",
    "tags_clean",
]
