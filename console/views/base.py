"""What every console view shares: the login and staff guards, partial rendering, redirects.

Every view checks the login itself (`login_required`), and a staff-only one
its flag (`staff_required`, a 403 page), so a partial request cannot bypass
either; which projects a person sees is `console.roles`. One template per
page; an htmx request gets the page's inline partial (`page`, with
`Vary: HX-Request` on the view). Every POST also works as a plain form: it
redirects, while the htmx one gets the fragment back (`done`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from typing import Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, ValidationError
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import conditional_escape, format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views import csrf as csrf_views
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from console import roles, services
from console.forms import LoginForm

P = ParamSpec("P")
T = TypeVar("T")


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware."""

    htmx: HtmxDetails


# HttpResponseBase: a streamed download (the export) is a view like any other.
View = Callable[Concatenate[HtmxHttpRequest, P], HttpResponseBase]


def login_required(view: View[P]) -> View[P]:
    """Anonymous pages redirect to the login; anonymous htmx requests get a 403
    whose HX-Redirect sends the whole window to the login page (which says so
    when the request was a change, `unsaved=1`: a star clicked after the session
    ended went to the login without a word, and the star was not there after it;
    a guarded form's text stays on its page, static/console/app.js). Every answer
    to a logged-in person is `Cache-Control: no-store`."""

    def wrapped(request: HtmxHttpRequest, /, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        if request.user.is_authenticated:
            response = view(request, *args, **kwargs)
            # Console pages change under the person (a star, a delete): never
            # keep a copy, so Back shows the page as it is now.
            add_never_cache_headers(response)
            return response
        if request.htmx:
            return _to_login(request)
        return redirect_to_login(request.get_full_path())

    update_wrapper(wrapped, view)
    return wrapped


def _to_login(request: HtmxHttpRequest) -> HttpResponse:
    """An anonymous htmx request's answer: 403, and HX-Redirect to the login."""
    current = urlsplit(request.htmx.current_url or "/")
    response = HttpResponse("Log in to continue.", status=403)
    next_url = current.path + (f"?{current.query}" if current.query else "")
    if request.method == "GET" and request.path == current.path:
        # The page itself with what was just typed (a search as you type, a
        # filter): back to it, not to the query the page was loaded with.
        next_url = request.get_full_path()
    elif request.method == "GET" and request.path == reverse("palette"):
        # The palette, typed into on any page: on to the search of what was typed.
        typed = request.GET.get("q", "").strip()
        next_url = f"{reverse('search')}?{urlencode({'q': typed})}" if typed else next_url
    asked = {"next": next_url}
    if request.method != "GET":  # a star, an archive: the login says it was not done
        asked["unsaved"] = "1"
    response["HX-Redirect"] = f"{reverse('login')}?{urlencode(asked)}"
    return response


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a change refused for its token. When the session is gone too
    (every cookie of the site cleared), it goes to the login as `login_required` sends
    it, which says the change was not saved; the page's "out of date, reload" said
    nothing of being logged out. A log-in rotates the token, so two forms of an older
    tab fail once the person logged in elsewhere: the login form (logged in already:
    on to where it led, saying as whom) and the log-out button (the page says the person is still
    logged in and offers the button again, with the token of now; logging out without
    a token would let any site log a person out). Otherwise Django's own 403."""
    htmx = getattr(request, "htmx", None)
    authenticated = request.user.is_authenticated
    if htmx and not authenticated:
        return _to_login(request)  # type: ignore[arg-type]
    if authenticated and request.path == reverse("login"):
        messages.info(request, f"Already logged in as {request.user.get_username()}.")
        return redirect(next_url(request, reverse("search")))
    if authenticated and request.path == reverse("logout"):
        return render(request, "logout_again.html", status=403)
    return csrf_views.csrf_failure(request, reason)


def staff_required(view: View[P]) -> View[P]:
    """Refuse a person without the staff flag with the 403 page (the settings pages).

    Put under `login_required`, so an anonymous request still goes to the login.
    """

    def wrapped(request: HtmxHttpRequest, /, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        if not roles.is_staff(request.user):
            raise PermissionDenied(
                "Only staff may open this page: ask a staff member if you need it."
            )
        return view(request, *args, **kwargs)

    update_wrapper(wrapped, view)
    return wrapped


def visible_or_404(request: HttpRequest, project: str | None) -> None:
    """A 404 (as for an unknown id) when the item's project is not one the person sees."""
    if not roles.can_see(request.user, project):
        raise Http404("No such item.")


def changeable_or_403(request: HttpRequest, project: str | None) -> None:
    """`visible_or_404`, then a 403 saying why when the person may see the item but not
    change it (a global one, for a person without the staff flag: `roles.can_change`)."""
    visible_or_404(request, project)
    if not roles.can_change(request.user, project):
        raise PermissionDenied(roles.GLOBAL_CHANGES)


def partial(request: HtmxHttpRequest) -> bool:
    """An htmx request that wants a fragment (not a history restore)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def page(
    request: HtmxHttpRequest, template: str, context: dict[str, Any], fragment: str
) -> HttpResponse:
    """The whole page, or its inline partial `fragment` for htmx."""
    if partial(request):
        template = f"{template}#{fragment}"
    return render(request, template, context)


def done(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """After a successful write: htmx navigates the window, a plain form redirects."""
    return HttpResponseClientRedirect(url) if partial(request) else redirect(url)


def next_url(request: HttpRequest, default: str) -> str:
    """The POSTed `next` (else the address's) when it stays on this site, else `default`."""
    url = request.POST.get("next") or request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return url if url and safe else default


def or_404(get: Callable[..., T], **kwargs: Any) -> T:
    """`get(**kwargs)`, with a missing row as a 404."""
    try:
        return get(**kwargs)
    except ObjectDoesNotExist as exc:
        raise Http404("No such item.") from exc


def add_errors(form: Form, exc: ValidationError) -> None:
    """A service's ValidationError onto the form: per field where it names one."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.error_dict.items():
            form.add_error(field if field in form.fields else None, said(errors))
    else:
        form.add_error(None, said(exc.error_list))


def error_text(exc: ValidationError) -> str:
    """A service's ValidationError as one line for a page (a name held, linked)."""
    errors = (
        [e for es in exc.error_dict.values() for e in es]
        if hasattr(exc, "error_dict")
        else exc.error_list
    )
    return mark_safe(" ".join(conditional_escape(line) for line in said(errors)))


def said(errors: list[ValidationError]) -> list[str]:
    """Each error's text for a page: a name another memory holds links to that memory
    (the API's text gives its id), the rest as it reads, escaped where shown."""
    return [_linked(e) if e.code == services.NAME_HELD else _text(e) for e in errors]


def _text(error: ValidationError) -> str:
    return str(error.message % error.params if error.params else error.message)


def _linked(error: ValidationError) -> str:
    params = {k: conditional_escape(v) for k, v in (error.params or {}).items()}
    holder = str((error.params or {})["holder"])
    link = format_html('<a href="{}">{}</a>', reverse("memory_detail", args=[holder]), holder)
    return mark_safe(conditional_escape(error.message) % {**params, "holder": link})


class LoginView(auth_views.LoginView):
    """Django's login, saying a refusal in the console's words (`LoginForm`)."""

    authentication_form = LoginForm

    def get_form(self, form_class: Any = None) -> Any:
        """After a refusal that kept the username, the cursor waits in the password:
        it sat in the username, typed already, and the first keys typed went there."""
        form = super().get_form(form_class)
        if form.is_bound and form.data.get("username"):
            form.fields["username"].widget.attrs.pop("autofocus", None)
            form.fields["password"].widget.attrs["autofocus"] = True
        return form


class LogoutView(auth_views.LogoutView):
    """Django's logout, then a word on the login page it lands on (it said nothing)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        was = request.user.get_username() if request.user.is_authenticated else ""
        response = super().post(request, *args, **kwargs)
        if was:
            messages.info(request, f"Logged out {was}.")
        return response
