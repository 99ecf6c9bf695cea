"""The MCP server (`manage.py mcp`, stdio): the agent API's calls as MCP tools.

The token comes from the RECALL_AGENT_TOKEN environment variable and is
verified on every call (a revoked token stops working mid-session). Each
tool is the REST call of the same name: its input schema IS the REST
request schema (`console.schemas`, unknown fields refused, descriptions,
defaults, ranges and enums included; `memory_recall` advertises its tuning
fields by name only, `RECALL_TUNING`), it runs the same operation
(`console.operations`) and returns the same JSON, compact, as its text (for
`briefing` and `prompt_recall`, the block itself) with the JSON as
structured content under a published output schema. An error is a tool
error whose text is the API's error JSON plus its HTTP `status`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from ninja import Field
from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticCustomError

from console import access, actor, errors, mcp_stdio, operations, tokens
from console.access import Access
from console.schemas import (
    AssociateIn,
    AssociationOut,
    BatchOut,
    Body,
    BriefingIn,
    ContextPackOut,
    DeletedOut,
    DissociatedOut,
    DissociateIn,
    FavoriteOut,
    FeedbackIn,
    FeedbackOut,
    GraphIn,
    GraphOut,
    MemoryBatchIn,
    MemoryFavoriteIn,
    MemoryIdIn,
    MemoryIn,
    MemoryListIn,
    MemoryOut,
    MemoryPage,
    MemoryRef,
    MemoryUpdateIn,
    MemoryUpdateOut,
    MemoryWriteOut,
    NoteChange,
    NoteIn,
    NoteListIn,
    NotesOut,
    NoteWrittenOut,
    PlaneSearchIn,
    ProjectIn,
    ProjectOut,
    ProjectsOut,
    PromptIn,
    RecallIn,
    SearchIn,
    SearchOut,
    SupersedeIn,
    TextOut,
    field_names,
    fields_at,
)
from console.schemas.common import Slug
from console.schemas.requests import PROJECT
from recall.agent import dumps
from recall.config import MAX_BUDGET, MIN_BUDGET
from recall.errors import QueryError

log = logging.getLogger(__name__)
TOKEN_ENV = "RECALL_AGENT_TOKEN"

# What `instructions` tells an agent each tool is for, in the order it reads them:
# only the tools its server offers are named.
GUIDE = (
    ("briefing", "call `briefing` once at session start"),
    (
        "memory_recall",
        "`memory_recall` before acting on anything past sessions may have settled "
        "(conventions, gotchas, decisions): its items carry their text, within the token "
        "budget you ask for",
    ),
    ("memory_read", "`memory_read` (by id or name) for one memory in full"),
    (
        "memory_write",
        "`memory_write` when you learn something a future session needs (give `session_id` "
        "for conversation turns; check the returned dedup_hint)",
    ),
    ("memory_supersede", "`memory_supersede` when a memory is wrong or outdated"),
    (
        "memory_associate",
        "`memory_associate` to link two memories so recalling one brings the other "
        "(`memory_recall` with `include_associated` lists them apart)",
    ),
)
MANUAL = (
    ("memory_search_text", "`memory_search_text` (full text alone)"),
    ("memory_search_vector", "`memory_search_vector` (meaning alone)"),
    ("memory_graph", "`memory_graph` (what a memory links to)"),
)


def instructions(offered: Collection[str]) -> str:
    """What the server tells an agent at `initialize`, naming only the tools in `offered`
    (a tool it named and did not list sent the agent to call it in vain)."""
    said = "; ".join(text for name, text in GUIDE if name in offered)
    out = "Long-term memory for this project."
    if said:
        out += f" {said[0].upper()}{said[1:]}."
    manual = [text for name, text in MANUAL if name in offered]
    if manual:
        out += f" For manual control: {', '.join(manual)}."
    return out


class NotesReadIn(Body):
    id: str | None = Field(None, max_length=120, description="one note by id (or its name)")
    project: str | None = Field(None, max_length=64, description="or the newest of a project")
    limit: int = Field(20, ge=1, le=100, description="how many of the newest")
    detail: Literal["full", "index"] = Field(
        "index",
        description='the newest: "index" (default) without their bodies (body_chars says '
        'each one\'s size; read one by id for it); "full": with the bodies',
    )
    budget: int | None = Field(
        None,
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        description="with id: tokens the whole reply may take: a longer body is cut to fit, "
        "with truncated and body_chars (default: the whole body)",
    )


class NoteWriteIn(NoteChange):
    """A new note (its title needed), or with `id` an edit of that note: only the fields
    given change, as `PATCH /notes/{id}` (an edit that had to send the title again to
    change a body was refused "title: Field required")."""

    title: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="the note's title (needed for a new note; with `id`, only to rename it)",
    )
    project: Slug | None = Field(None, description=f"for a new note: {PROJECT}")
    idempotency_key: str | None = Field(
        None, max_length=200, description="for a new note: a retry with the same key gets "
        "the first answer"
    )  # fmt: skip
    id: str | None = Field(None, max_length=26, description="update this note instead")


class NoArgs(Body):
    """No arguments."""


class AnyArguments(ArgModelBase):
    """Passes the raw arguments through: the tool validates them with the REST schema."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def current_access() -> Access:
    """The scope of the token in RECALL_AGENT_TOKEN, verified now."""
    token = tokens.token_verify(os.environ.get(TOKEN_ENV, ""))
    if token is None:
        raise access.AccessDenied(f"{TOKEN_ENV} is missing, invalid or revoked")
    return access.access_for(token)


def too_big(arguments: dict[str, Any]) -> None:
    """RequestDataTooBig for arguments larger than a REST body may be: a batch of
    2.3 MB was refused over REST (413) and written over MCP, one contract apart."""
    size = len(json.dumps(arguments, ensure_ascii=False).encode())
    if size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise RequestDataTooBig(f"{size} bytes of arguments")


def _error(
    exc: Exception,
    *,
    takes: Sequence[str] = (),
    nested: Callable[[str], Sequence[str]] | None = None,
) -> CallToolResult:
    """The tool error for `exc`; an unknown field's names what the tool takes instead
    (an agent that sent memory_search a `query` learns it is `q`)."""
    described = errors.describe(exc)
    if described is None:
        log.exception("unexpected error in an MCP tool")
        described = errors.simple(500, "an unexpected error; it has been logged")
    described = errors.naming_what_it_takes(described, takes, nested)
    if isinstance(exc, access.AccessDenied) and TOKEN_ENV in str(exc):
        described = errors.simple(401, str(exc))
    return _refused(described)


def _refused(described: errors.ErrorReply) -> CallToolResult:
    body = {**described.body(), "status": described.status}
    return CallToolResult(content=[TextContent(type="text", text=dumps(body))], is_error=True)


Run = Callable[[Access, Any], operations.Answer]


@dataclass(frozen=True)
class Spec:
    """One tool: its name, request schema, reply schema, what it runs, what it may change."""

    name: str
    args: type[BaseModel]
    reply: type[BaseModel]
    run: Run
    description: str
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    tuning: tuple[str, ...] = ()  # taken, not advertised: their names close the description

    def said(self) -> str:
        """The description an agent reads: a tool that changes anything says it needs a
        write token (or names the scope it needs), so a read-only agent skips it; one
        with `tuning` fields names them (their ranges are in the REST schema)."""
        text = " ".join(self.description.split())
        if self.tuning:
            text += f" Also takes the REST call's tuning fields: {', '.join(self.tuning)}."
        needs = ("write token", "admin scope")
        if self.read_only or any(n in text for n in needs):
            return text
        return f"{text} Needs a write token."

    def advertised(self) -> dict[str, Any]:
        """The input schema an agent reads: the request model's, compact, less `tuning`."""
        schema: dict[str, Any] = compact(self.args.model_json_schema(by_alias=True))
        if self.tuning:
            for name in self.tuning:
                del schema["properties"][name]
            required = [n for n in schema.get("required", ()) if n not in self.tuning]
            schema.pop("required", None)
            if required:
                schema["required"] = required
        return schema

    def fields(self) -> tuple[str, ...]:
        """The argument names the tool takes, as its schema spells them."""
        return field_names(self.args)

    def build(self) -> Tool:
        def call(**raw: Any) -> CallToolResult:
            close_old_connections()
            try:
                too_big(raw)
                payload = self.args.model_validate(raw)
                who = current_access()
                with actor.acting_agent(who.agent):  # its revisions name the agent
                    answer = self.run(who, payload)
            except Exception as exc:
                return _error(exc, takes=self.fields(), nested=partial(fields_at, self.args))
            text = TextContent(type="text", text=answer.text)
            return CallToolResult(content=[text], structured_content=answer.body)

        hints = ToolAnnotations(
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )
        return Tool(
            fn=call,
            name=self.name,
            title=self.name.replace("_", " ").capitalize(),
            description=self.said(),
            parameters=self.advertised(),
            fn_metadata=FuncMetadata(arg_model=AnyArguments, output_model=self.reply),
            is_async=False,
            context_kwarg=None,
            annotations=hints,
        )


# memory_recall's fields for evaluating and tuning the ranking rather than asking it:
# in every session's tool list they were 3,250 of its schema's 6,903 characters (about
# 800 tokens). They are still taken (the REST schema gives their ranges); an agent reads
# their names at the end of the tool's description.
RECALL_TUNING = (
    "rrf_k", "channel_weights", "routing", "k", "hops", "graph_seeds", "graph_reverse",
    "graph_min_weight", "graph_cap", "associated_cap", "associated_depth",
    "associated_min_weight", "session_neighbours", "session_window_minutes", "session_turns",
    "session_cap", "importance_weighted", "worth_weight", "decay", "strict", "record",
    "entities", "top_k", "types",
)  # fmt: skip


def compact(schema: Any) -> Any:
    """A JSON schema as an agent reads it, in fewer tokens: no `title` per property (its
    name says it) and an optional value as its own type (`anyOf` with null, default
    null, is the same as leaving it out). Every session's context holds the tool list;
    the arguments are still checked against the full model (`Spec.build`)."""
    if isinstance(schema, list):
        return [compact(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    either = out.get("anyOf")
    optional = "default" in out and out["default"] is None
    if optional and isinstance(either, list) and len(either) == 2 and {"type": "null"} in either:
        kept = next(e for e in either if e != {"type": "null"})
        del out["anyOf"], out["default"]
        out = {**kept, **out}
    for key, value in out.items():
        if key in ("properties", "$defs", "patternProperties"):
            out[key] = {name: compact(sub) for name, sub in value.items()}
        elif isinstance(value, (dict, list)):
            out[key] = compact(value)
    return out


def _notes_read(who: Access, p: NotesReadIn) -> operations.Answer:
    if p.id is not None:
        return operations.note_read(who, p.id, budget=p.budget, reply=lambda v: {"notes": [v]})
    if p.budget is not None:  # said rather than ignored
        raise QueryError(
            "budget cuts one note read by id; give `id` too, or leave it out", field="budget"
        )
    return operations.note_list(who, NoteListIn(project=p.project, limit=p.limit, detail=p.detail))


def _notes_write(who: Access, p: NoteWriteIn) -> operations.Answer:
    """A new note, or an edit of note `id`. The fields are valid already and their text
    unescaped once (`as_read`): they are handed on as they are, never validated again,
    since a second unescape turned a person's `&lt;b&gt;` into `<b>` at an agent's edit."""
    if p.id is None:
        if p.title is None:  # a 422 as NoteIn's, saying what else the caller may mean
            said = PydanticCustomError(
                "missing", "a new note needs one; to change a note, give its id"
            )
            raise PydanticValidationError.from_exception_data(
                "notes_write", [{"type": said, "loc": ("title",), "input": {}}]
            )
        given = p.model_fields_set - {"id"}
        return operations.note_write(who, NoteIn.model_construct(given, **p.dict(exclude={"id"})))
    given = p.model_fields_set - {"id", "project", "idempotency_key"}
    return operations.note_update(
        who, p.id, NoteChange.model_construct(given, **p.dict(include=set(NoteChange.model_fields)))
    )


WRITE: dict[str, Any] = {"read_only": False, "idempotent": False}
SPECS = (
    Spec(
        "memory_recall",
        RecallIn,
        ContextPackOut,
        operations.recall,
        """
        Recall what past sessions learned that bears on a task: ranked memories and notes
        with their text, the whole reply within `budget` tokens. Call it BEFORE you plan or
        change anything non-trivial, and whenever the user refers to something decided
        earlier. Empty query + kind lists that kind, newest first. An item leaves out the
        defaults (item memory, source fused, worth 0.5) and the pack's `project`; the
        reply's pack_id is what memory_feedback names.""",
        tuning=RECALL_TUNING,
    ),
    Spec(
        "memory_feedback",
        FeedbackIn,
        FeedbackOut,
        operations.feedback,
        """
        Say what the items of a memory_recall reply were worth (its pack_id): per item,
        used, helpful or harmful. Helpful memories rank higher in later recalls, harmful
        ones lower (Memory Worth). Call it once you know; again replaces your verdict.
        Needs a write token; only the agent that recalled the pack may rate it.""",
        read_only=False,
    ),
    Spec(
        "memory_search",
        SearchIn,
        SearchOut,
        operations.search,
        """
        Search memories and notes by words or meaning across your projects, a page at a
        time, with snippets. Use it to find a specific memory to read, edit or supersede;
        prefer memory_recall to gather context for a task. For the next page pass the
        reply's next_cursor as cursor (with the same q and filters): no hit comes twice.
        `budget` caps the reply in tokens: the page ends at the last hit that fits.""",
    ),
    Spec(
        "memory_search_text",
        PlaneSearchIn,
        SearchOut,
        operations.search_text,
        """
        The full-text plane alone: memories and notes ranked by BM25 on their words, each
        with its BM25 score. For exact terms, identifiers and error strings.""",
    ),
    Spec(
        "memory_search_vector",
        PlaneSearchIn,
        SearchOut,
        operations.search_vector,
        """
        The vector plane alone: memories and notes ranked by meaning (cosine similarity,
        the score), no floor. For paraphrases and questions that share no word.""",
    ),
    Spec(
        "memory_graph",
        GraphIn,
        GraphOut,
        operations.memory_graph,
        """
        Walk the memory graph from one memory (by id or name): the memories its [[links]],
        associations and supersessions reach within 1-3 hops, each with its edges' types,
        the memories it goes through and its score (the product of edge weights).""",
    ),
    Spec(
        "memory_read",
        MemoryRef,
        MemoryOut,
        operations.memory_read,
        """
        Read one memory in full, by id or by name (the project's first, then global);
        with budget, a long body is cut so the reply fits (truncated, body_chars).""",
    ),
    Spec(
        "memory_list",
        MemoryListIn,
        MemoryPage,
        operations.memory_list,
        """
        List memories newest first with filters (kind, tags, session, agent, dates,
        archived), a page at a time: pass next_cursor back as cursor. A page of 50 is
        about 5,200 tokens: `limit` or `budget` keeps it smaller.""",
    ),
    Spec(
        "memory_write",
        MemoryIn,
        MemoryWriteOut,
        operations.memory_write,
        """
        Save something a future session must know (a convention, gotcha, decision,
        constraint, fact, or a conversation turn with session_id). Call it when you learn
        it. A retry with the same idempotency_key gets the first answer; the same text
        already stored comes back with created=false.""",
        **WRITE,
    ),
    Spec(
        "memory_write_batch",
        MemoryBatchIn,
        BatchOut,
        operations.memory_write_batch,
        """
        Save up to 500 memories in one transaction (all or none): for importing a
        conversation or a document's facts at once. A batch of up to 20 gets each new
        item's dedup_hint, as memory_write does.""",
        **WRITE,
    ),
    Spec(
        "memory_supersede",
        SupersedeIn,
        MemoryWriteOut,
        lambda who, p: operations.memory_supersede(who, p.id, p),
        """
        Replace a memory that is wrong or outdated: the new version keeps every field you
        do not give, and the old one stops being recalled.""",
        **WRITE,
    ),
    Spec(
        "memory_update",
        MemoryUpdateIn,
        MemoryUpdateOut,
        lambda who, p: operations.memory_update(who, p.id, p),
        """
        Change a memory in place (fix a typo, add a tag, move its expiry): only the fields
        you give change. For a fact that is no longer true, use memory_supersede instead,
        so its history stays.""",
        read_only=False,
    ),
    Spec(
        "memory_associate",
        AssociateIn,
        AssociationOut,
        lambda who, p: operations.memory_associate(who, p.id, p),
        """
        Link a memory to another (its id or name; same project or global) with a type
        (caused, depends-on, ...) and a weight 0-1, so recall of one brings the other.
        Again with the same type sets its weight.""",
        read_only=False,
    ),
    Spec(
        "memory_dissociate",
        DissociateIn,
        DissociatedOut,
        lambda who, p: operations.memory_dissociate(who, p.id, p),
        """
        Remove a memory's association(s) to another (of one type, or every type).""",
        read_only=False,
    ),
    Spec(
        "memory_archive",
        MemoryIdIn,
        MemoryOut,
        lambda who, p: operations.memory_archive(who, p.id),
        """
        Archive a memory that no longer applies (it can be restored).""",
        read_only=False,
    ),
    Spec(
        "memory_restore",
        MemoryIdIn,
        MemoryOut,
        lambda who, p: operations.memory_restore(who, p.id),
        """
        Bring back an archived memory, so it is recalled again.""",
        read_only=False,
    ),
    Spec(
        "memory_favorite",
        MemoryFavoriteIn,
        FavoriteOut,
        lambda who, p: operations.memory_favorite(who, p.id, p),
        """
        Star a memory (favorite=true) so every briefing of its project shows it, unstar it
        (false), or toggle it (absent).""",
        read_only=False,
    ),
    Spec(
        "memory_delete",
        MemoryIdIn,
        DeletedOut,
        lambda who, p: operations.memory_delete(who, p.id),
        """
        Delete a memory for good. Prefer memory_archive or memory_supersede; delete only
        what should never have been stored.""",
        read_only=False,
        destructive=True,
    ),
    Spec(
        "notes_read",
        NotesReadIn,
        NotesOut,
        _notes_read,
        """
        Read people's notes: one by id, in full (with budget, a long body is cut so the
        reply fits), or the newest of a project (by title and description; `detail:
        "full"` adds their bodies).""",
    ),
    Spec(
        "notes_write",
        NoteWriteIn,
        NoteWrittenOut,
        _notes_write,
        """
        Write a longer note for people; with `id`, update that note. Use memory_write for
        short facts a future agent must recall. Check the returned dedup_hint.""",
        **WRITE,
    ),
    Spec(
        "briefing",
        BriefingIn,
        TextOut,
        operations.briefing,
        """
        The session-start briefing: constraints, starred memories and an index of the rest.
        Call it ONCE at the start of a session (a subagent passes agent_type and its task
        as prompt). The text is the block, or one line saying why none came, within
        `budget`.""",
    ),
    Spec(
        "prompt_recall",
        PromptIn,
        TextOut,
        operations.prompt_recall,
        """
        The memories a user prompt names by their words, as a short block: a memory
        whose name and description share at least two words (3+ letters, not stopwords)
        with the prompt, and words rare enough in the project to clear a score floor (a
        word many memories hold weighs little), at most 3; when none does, "(no memory
        matched this prompt)"
        (structured `text` ""); matches no line of which fits `budget` get one line
        saying so, within it. Cheap; call it on each new user
        prompt, and memory_recall for a question in other words.""",
    ),
    Spec(
        "projects_list",
        NoArgs,
        ProjectsOut,
        lambda who, p: operations.project_list(who),
        """
        The projects this token may use.""",
    ),
    Spec(
        "project_create",
        ProjectIn,
        ProjectOut,
        operations.project_create,
        """
        Create a project (needs a token with the admin scope).""",
        **WRITE,
    ),
)


# The tools ARCHITECTURE section 6 gives an agent's session (`manage.py mcp --tools
# core`): the 24 tools' names, descriptions and input schemas are about 8,800 tokens of
# every session's context, these 8 about half of that.
CORE = (
    "memory_recall", "memory_search", "memory_read", "memory_write", "memory_supersede",
    "notes_read", "notes_write", "briefing",
)  # fmt: skip
TOOLS_ENV = "RECALL_MCP_TOOLS"


def offered(choice: str) -> tuple[Spec, ...]:
    """The tools a server offers for `choice`: "all", "core" (`CORE`), or tool names and
    "core" separated by commas (`core,memory_list`), in `SPECS`' order. An unknown name
    is a ValueError naming the choices."""
    named = {spec.name: spec for spec in SPECS}
    wanted: set[str] = set()
    for word in (w.strip() for w in choice.split(",")):
        if word == "all":
            wanted |= set(named)
        elif word == "core":
            wanted |= set(CORE)
        elif word in named:
            wanted.add(word)
        else:
            raise ValueError(
                f"no tool or set named {word[:100]!r}: give all, core or tool names "
                f"separated by commas ({', '.join(named)})"
            )
    return tuple(spec for spec in SPECS if spec.name in wanted)


class RecallServer(MCPServer):
    """The SDK's server, with a call to a tool it does not have answered in the one error
    shape (404), as every tool's refusal is: the SDK's own answer was the bare text
    "Unknown tool: ...", which a client reading `{detail, field, code, status}` could not."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None:
            names = ", ".join(sorted(tool.name for tool in self._tool_manager.list_tools()))
            said = f"no tool named {name[:100]!r}; the tools are {names}"
            if any(spec.name == name for spec in SPECS):
                said = (
                    f"this server does not offer {name} (`manage.py mcp --tools` or "
                    f"{TOOLS_ENV} chose its tools); the tools are {names}"
                )
            return _refused(errors.simple(404, said))
        return await super().call_tool(name, arguments, context)


def build_server(tools: Sequence[Spec] = SPECS) -> MCPServer:
    return RecallServer(
        name="recall",
        title="Recall memory",
        version="1",
        instructions=instructions({spec.name for spec in tools}),
        tools=[spec.build() for spec in tools],
    )


def serve(tools: Sequence[Spec] = SPECS) -> None:
    """Run over stdio until the client closes the pipe; a malformed line is answered
    with a JSON-RPC error and the session goes on (console.mcp_stdio)."""
    mcp_stdio.serve(build_server(tools))
