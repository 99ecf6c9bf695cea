"""Rendering for people: markdown bodies, item links, dates, small display helpers.

Markdown is rendered with raw HTML off (typed tags show as text), `[[name]]`
becomes a link to that memory, a bare URL or e-mail address a link to it, then the HTML
is cleaned by nh3 with an allow-list (http, https and mailto links only, each
rel="noopener noreferrer nofollow"). Result snippets are cut
from plain text and escaped piece by piece (console/views/text.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, unquote

import nh3
from django import template
from django.urls import get_script_prefix, reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml as escape_html
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline

from console import roles
from console.forms import QUERY_CHARS
from console.models import Note
from recall import sanitize
from recall.links import WIKILINK
from recall.results import Hit

register = template.Library()

SENTINELS = str.maketrans({"\x01": "", "\x02": ""})

TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "a", "em",
    "strong", "del", "code", "pre", "blockquote", "table", "thead", "tbody", "tr", "th",
    "td",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
CLASSES = {"a": {"wikilink", "missing"}}
URL_SCHEMES = {"http", "https", "mailto"}

Resolver = Callable[[str], tuple[str, bool]]  # name -> (href, exists)


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("[[", state.pos):
        return False
    match = WIKILINK.match(state.src, state.pos)
    resolve: Resolver | None = state.env.get("resolve")
    if match is None or resolve is None:
        return False
    if not silent:
        name = match.group(1).strip()
        href, exists = resolve(name)
        token = state.push("link_open", "a", 1)
        token.attrs = {"href": href, "class": "wikilink" if exists else "wikilink missing"}
        text = state.push("text", "", 0)
        text.content = (match.group(2) or name).strip()
        state.push("link_close", "a", -1)
    state.pos = match.end()
    return True


def _image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """An image is never fetched (nh3 allows no <img>), but it no longer vanishes
    with its alt text: it reads "[image: alt]", a link to where it lives."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env).strip() or "image"
    src = token.attrGet("src") or ""
    return f'<a href="{escape_html(str(src))}">[image: {escape_html(alt)}]</a>'


class _Markdown(MarkdownIt):
    _HIDDEN = re.compile(r"[\x00-\x20\x7f]+")

    def validateLink(self, url: str) -> bool:  # noqa: N802 - markdown-it's name
        """markdown-it's check, and again on the link as a browser reads its scheme:
        escapes decoded, tabs, newlines and spaces gone. `[x](java&#x09;script:...)`
        then stays text like `[x](javascript:...)`, not a broken relative link."""
        seen = self._HIDDEN.sub("", unquote(url))
        return super().validateLink(url) and super().validateLink(seen)


def _below_the_title(state: StateCore) -> None:
    """Headings one level down (`#` renders h2, ... `#####` and `######` h6): the page's
    h1 is the item's title, and a body's `# Heading` made a second one."""
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + 1)}"


def _revealed(state: StateCore) -> None:
    """Every character of a body that would reverse or hide text shown as `⟨U+202E⟩`
    (`sanitize.revealed`), in its text, code and link titles; hrefs and `[[name]]`
    lookups keep the name as written (a link's href is percent-encoded)."""
    tokens = list(state.tokens)
    while tokens:  # an image's alt text is a child of a child
        t = tokens.pop()
        tokens.extend(t.children or ())
        if t.type in ("text", "code_inline", "code_block", "fence"):
            t.content = sanitize.revealed(t.content)
        if t.attrs.get("title"):
            t.attrs["title"] = sanitize.revealed(str(t.attrs["title"]))


# linkify: a bare URL (`https://...`, `www.example.com`) or e-mail address is a link
# (linkify-it-py): a body's URLs were plain text, and a person copied them out by hand.
# nh3 then keeps http, https and mailto alone; markdown-it refuses `javascript:` first.
_md = _Markdown("commonmark", {"html": False, "linkify": True}).enable(
    ["table", "strikethrough", "linkify"]
)
_md.inline.ruler.before("link", "wikilink", _wikilink_rule)
_md.core.ruler.push("below_the_title", _below_the_title)
_md.core.ruler.push("revealed", _revealed)
_md.add_render_rule("image", _image)


# Each block of text takes its direction from its own first letter (a Hebrew or
# Arabic paragraph reads right to left beside English ones); added after nh3, which
# leaves these tags bare.
_BLOCKS = re.compile(r"<(p|li|h[1-6]|td|th|blockquote)>")


def render_markdown(text: str, *, resolve: Resolver | None = None) -> SafeString:
    html = _md.render((text or "").translate(SENTINELS), {"resolve": resolve})
    cleaned = nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        allowed_classes=CLASSES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(_BLOCKS.sub(r'<\1 dir="auto">', cleaned))  # noqa: S308 - nh3 output


@register.simple_tag
def query_chars() -> int:
    """The longest query the console takes: its search boxes stop there, not the server."""
    return QUERY_CHARS


@register.simple_tag
def markdown(text: str, links: Mapping[str, str] | None = None, fallback: str = "") -> SafeString:
    """`{% markdown body links fallback %}`: `links` maps a name to its page; any
    other name goes to `fallback` with `__name__` replaced (the by-name resolver)."""
    known = dict(links or {})

    def resolve(name: str) -> tuple[str, bool]:
        if name in known:
            return known[name], True
        return fallback.replace("__name__", quote(name, safe="")), False

    return render_markdown(text, resolve=resolve)


_ITEM_URLS: dict[tuple[str, str], str] = {}


@register.filter
def item_url(hit: Any) -> str:
    """A hit's page (memory or note), reversed once per view name and prefix.

    Lists render one per hit on every keystroke; `{% url %}` per hit cost
    more than the rest of the row."""
    name = "note_detail" if getattr(hit, "kind", "") == "note" else "memory_detail"
    key = (name, get_script_prefix())
    pattern = _ITEM_URLS.get(key)
    if pattern is None:
        pattern = _ITEM_URLS[key] = reverse(name, args=["__item__"])
    return pattern.replace("__item__", quote(str(hit.id), safe=""))


@register.filter
def shown(text: Any) -> str:
    """Stored text as a person sees it: stray \\x01/\\x02 characters dropped, and each
    character that would reverse or hide the text around it shown as `⟨U+202E⟩`
    (`sanitize.revealed`). Plain text, so it is escaped as any, in an attribute too."""
    return sanitize.revealed(str(text or "").translate(SENTINELS))


@register.filter
def disguising(item: Any) -> str:
    """The code points in an item's stored text that would reverse or hide the text
    around them ("U+202E, U+200B"), for the edit form: its boxes keep them as stored."""
    texts = (getattr(item, f, "") for f in ("name", "title", "description", "body"))
    return ", ".join(sanitize.disguising(" ".join(str(t or "") for t in texts)))


@register.filter
def home(item: Any) -> str:
    """Where an item lives, as its own page says: its project, else a note's inbox or
    the global memories."""
    project = getattr(item, "project", None)
    if project:
        return str(getattr(project, "slug", project))
    return "inbox" if getattr(item, "kind", "") == "note" else "global"


@register.filter
def starrable(item: Any, user: Any) -> bool:
    """Whether the person may star `item` (a hit, a memory or a note): a global
    memory's star pins it in every project's briefing, so staff alone star one
    (`roles.can_change`)."""
    if isinstance(item, Note) or (isinstance(item, Hit) and item.kind == "note"):
        return True
    project = getattr(item, "project", None)
    return roles.can_change(user, getattr(project, "slug", project) or None)


@register.filter
def as_read(text: Any) -> str:
    """Agent text (`<`, `>` and entity-like `&` escaped once: `recall.sanitize`) as the
    text it stands for, for a person; the template escapes it once, as any text."""
    return sanitize.read_back(str(text or ""))


@register.filter
def tagged(messages: Any, tag: str) -> list[Any]:
    """The messages with `tag` among their tags ("-tag": those without), so a section
    can show its own next to it (the digest's) and the page top the rest."""
    if tag.startswith("-"):
        return [m for m in messages if tag[1:] not in m.tags.split()]
    return [m for m in messages if tag in m.tags.split()]


@register.filter
def get(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def when(value: Any) -> str:
    """A date as a person says it: "today", "yesterday", "3 days ago", else "8 May 2023"."""
    if not value:
        return ""
    now = timezone.localtime()
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    days = (now.date() - local.date()).days
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if 1 < days < 7:
        return f"{days} days ago"
    return f"{local.day} {local:%b %Y}"
