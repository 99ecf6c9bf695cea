// The console's own behaviour: the Ctrl/Cmd-K palette, keyboard navigation,
// focus after every swap, scroll restoration, recents and the theme.
// No inline scripts (the CSP allows only 'self'); htmx does the rest.
(function () {
  "use strict";

  const store = {
    get(key, fallback) {
      try {
        const value = window.localStorage.getItem(key);
        return value === null ? fallback : JSON.parse(value);
      } catch (err) {
        return fallback;
      }
    },
    set(key, value) {
      try {
        window.localStorage.setItem(key, JSON.stringify(value));
      } catch (err) {
        // Storage off (private mode): nothing is remembered.
      }
    },
  };

  // --- theme ---------------------------------------------------------------------
  // theme.js applied a stored choice before paint; this flips it.
  function toggleTheme() {
    const root = document.documentElement;
    const dark = root.dataset.theme
      ? root.dataset.theme === "dark"
      : window.matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
    try {
      window.localStorage.setItem("recall-theme", root.dataset.theme);
    } catch (err) {
      // The choice lasts for this page only.
    }
  }

  // --- recents -------------------------------------------------------------------
  // A memory or note page names itself (data-recent); the palette offers the
  // last ones opened when it opens empty. Only ids are kept: the server
  // renders (and escapes) their current titles.
  const RECENT_KEY = "recall-recent";
  const here = document.querySelector("[data-recent]");
  if (here) {
    const id = here.getAttribute("data-recent");
    const ids = store.get(RECENT_KEY, []).filter(function (x) {
      return x !== id;
    });
    ids.unshift(id);
    store.set(RECENT_KEY, ids.slice(0, 8));
  }

  // --- palette ---------------------------------------------------------------------
  // Each keystroke fetches the palette endpoint (the FTS fast path). Requests
  // carry a sequence number and the previous one is aborted, so a slow, stale
  // response never overwrites a newer one. Options are never focused: focus
  // stays in the box and aria-activedescendant names the one highlighted row.
  const dialog = document.getElementById("palette");
  const input = document.getElementById("palette-q");
  const results = document.getElementById("palette-results");
  const closeButton = document.getElementById("palette-close");
  let seq = 0;
  let controller = null;
  let enterWhenAnswered = false; // Enter came before the answer to what is typed

  function options() {
    return results ? Array.from(results.querySelectorAll("[role=option]")) : [];
  }

  function select(index) {
    const items = options();
    items.forEach(function (el, i) {
      el.setAttribute("aria-selected", i === index ? "true" : "false");
      el.classList.toggle("selected", i === index);
    });
    input.setAttribute("aria-expanded", items.length ? "true" : "false");
    if (items[index]) {
      input.setAttribute("aria-activedescendant", items[index].id);
      items[index].scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function selectedIndex() {
    return options().findIndex(function (el) {
      return el.getAttribute("aria-selected") === "true";
    });
  }

  function fetchPalette() {
    const q = input.value;
    const mine = ++seq;
    if (controller) controller.abort();
    controller = new AbortController();
    const params = q.trim() ? { q: q } : { q: "", recent: store.get(RECENT_KEY, []).join(",") };
    const url = input.dataset.url + "?" + new URLSearchParams(params).toString();
    results.setAttribute("aria-busy", "true");
    fetch(url, {
      headers: { "HX-Request": "true" },
      credentials: "same-origin",
      signal: controller.signal,
    })
      .then(function (response) {
        if (response.status === 403 && response.headers.get("HX-Redirect")) {
          // Logged out (in another tab, an expiry) while typing: going to the login
          // page cut the search at the letters first sent and put the rest of what was
          // typed into its Username. The text stays here; the list says what to do.
          if (mine === seq) loggedOut(response.headers.get("HX-Redirect"));
          return undefined;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (mine !== seq || html === undefined) return; // stale, or said logged out
        if (html === null) return enterFailed();
        results.innerHTML = html; // server-rendered, escaped; scripts never run from innerHTML
        results.dataset.q = q;
        results.removeAttribute("aria-busy");
        select(options().length ? 0 : -1);
        if (enterWhenAnswered) {
          enterWhenAnswered = false;
          enter();
        }
      })
      .catch(function (err) {
        if (err && err.name !== "AbortError") {
          results.dataset.error = String(err);
          if (mine === seq) enterFailed();
        }
      });
  }

  // Enter opens the selected row, or the first; with no row, the search page for the
  // text. Pressed before the list answers what is typed now (a fast paste and Enter),
  // it waits for that answer instead of opening a row of the list for older text.
  function enter() {
    const items = options();
    const current = selectedIndex();
    const chosen = items[current >= 0 ? current : 0];
    if (chosen) choose(chosen);
    else searchPage();
  }

  function loggedOut(login) {
    const said = document.createElement("p");
    said.className = "error";
    said.setAttribute("role", "alert");
    const again = document.createElement("a");
    again.href = login;
    again.target = "_blank";
    again.rel = "noopener";
    again.textContent = "log in again in a new tab";
    said.append(
      "You are logged out (in another tab, or the session ended). What you typed is still here: ",
      again,
      ", then come back and go on.",
    );
    results.replaceChildren(said);
    results.dataset.q = input.value;
    results.removeAttribute("aria-busy");
    select(-1);
    enterFailed(); // an Enter already pressed opens the search, which asks for the login
  }

  function enterFailed() {
    if (!enterWhenAnswered) return;
    enterWhenAnswered = false; // no answer came: the search page answers instead
    searchPage();
  }

  // The search page for what is typed (the palette form's own action is the palette's
  // page, for a browser without script: with script, that bare list is no answer).
  function searchPage() {
    const q = input.value.trim();
    if (!q) return;
    window.location.href = input.dataset.search + "?" + new URLSearchParams({ q: q }).toString();
  }

  function choose(option) {
    if (!option) return;
    if (option.dataset.command === "theme") {
      toggleTheme();
      closePalette();
    } else if (option.href) {
      window.location.href = option.href;
    }
  }

  function openPalette() {
    if (!dialog || dialog.open) return;
    dialog.showModal();
    input.select();
    input.focus();
    fetchPalette();
  }

  function closePalette() {
    enterWhenAnswered = false;
    if (dialog && dialog.open) dialog.close();
  }

  if (dialog && input && results) {
    // While an input method composes (Chinese, Japanese, Korean), its keystrokes are not
    // the query yet: search once the composition ends, and let its Enter confirm it.
    input.addEventListener("input", function (event) {
      if (!event.isComposing) fetchPalette();
    });
    input.addEventListener("compositionend", fetchPalette);
    input.addEventListener("keydown", function (event) {
      if (event.isComposing || event.keyCode === 229) return;
      const items = options();
      const current = selectedIndex();
      if (event.key === "ArrowDown") {
        event.preventDefault();
        select(items.length ? (current + 1) % items.length : -1);
      } else if (event.key === "ArrowUp") {
        event.preventDefault();
        select(items.length ? (current - 1 + items.length) % items.length : -1);
      } else if (event.key === "Home" && items.length && !input.value) {
        event.preventDefault();
        select(0);
      } else if (event.key === "Enter") {
        event.preventDefault();
        if (results.dataset.q === input.value) enter();
        else enterWhenAnswered = true;
      } else if (event.key === "Escape") {
        event.preventDefault();
        closePalette();
      }
    });
    results.addEventListener("mousemove", function (event) {
      const item = event.target.closest("[role=option]");
      if (item && item.getAttribute("aria-selected") !== "true") select(options().indexOf(item));
    });
    results.addEventListener("click", function (event) {
      const item = event.target.closest("[data-command]");
      if (item) {
        event.preventDefault();
        choose(item);
      }
    });
    if (closeButton) closeButton.addEventListener("click", closePalette);
    dialog.addEventListener("click", function (event) {
      if (event.target === dialog) closePalette(); // a click on the backdrop
    });
    document.querySelectorAll("[data-palette-open]").forEach(function (el) {
      el.addEventListener("click", function (event) {
        event.preventDefault();
        openPalette();
      });
    });
  }

  // --- global keys -------------------------------------------------------------

  // A field a person types text into (a search box, a text area), not a choice.
  function textEntry(el) {
    if (el.tagName === "TEXTAREA" || el.isContentEditable) return true;
    return el.tagName === "INPUT" && ["text", "search"].indexOf(el.type) >= 0;
  }

  function typing(el) {
    if (!el) return false;
    const tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }

  // A search opened by a link or a reload has its box focused (autofocus) with the
  // caret at the start, so what was typed next went in front of the query.
  function caretAtEnd(box) {
    if (box.value && box.selectionStart === 0 && box.selectionEnd === 0) {
      box.setSelectionRange(box.value.length, box.value.length);
    }
  }
  function caretAtEndOnFocus() {
    const box = document.querySelector("[data-hit-nav]");
    if (!box) return;
    if (document.activeElement === box) caretAtEnd(box);
    else box.addEventListener("focus", function () { caretAtEnd(box); }, { once: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", caretAtEndOnFocus);
  else caretAtEndOnFocus();

  function hitLinks() {
    return Array.from(document.querySelectorAll("[data-hits] .hit-title"));
  }

  function moveHit(step) {
    const links = hitLinks();
    if (!links.length) return false;
    const at = links.indexOf(document.activeElement);
    const next = at < 0 ? (step > 0 ? 0 : links.length - 1) : at + step;
    if (next < 0) {
      // Up from the first result: back to the box that ↓ came from.
      const box = document.querySelector("[data-hit-nav]");
      if (box) box.focus();
      return true;
    }
    if (next >= links.length) return true;
    links[next].focus();
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "k") {
      event.preventDefault();
      if (dialog && dialog.open) closePalette();
      else openPalette();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || (dialog && dialog.open)) return;
    const active = document.activeElement;
    if (active && active.hasAttribute("data-hit-nav") && event.key === "ArrowDown") {
      if (moveHit(1)) event.preventDefault();
      return;
    }
    if (active && active.hasAttribute("data-hit-nav") && event.key === "Escape") {
      // A search box's own Escape empties it, and as-you-type search then threw
      // the results away: Escape leaves the box instead, for j/k.
      event.preventDefault();
      active.blur();
      return;
    }
    if (typing(active)) return;
    if (event.key === "j" || event.key === "ArrowDown") {
      if (moveHit(1)) event.preventDefault();
    } else if (event.key === "k" || event.key === "ArrowUp") {
      if (moveHit(-1)) event.preventDefault();
    } else if (event.key === "/") {
      const box = document.querySelector("[data-hit-nav]");
      if (box) {
        event.preventDefault();
        box.focus();
        box.select();
      }
    }
  });

  // --- an inline confirmation ---------------------------------------------------------
  // Delete's confirmation is swapped in beside the button (#confirm-slot): Esc or its
  // Cancel takes it away and gives focus back to the button that asked, without
  // loading the page again (Cancel stays a plain link without script).
  function dismissConfirm(slot) {
    slot.replaceChildren();
    const opener = slot.parentElement && slot.parentElement.querySelector('[data-focus-key="delete"]');
    if (opener) opener.focus();
  }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || (dialog && dialog.open) || typing(document.activeElement)) return;
    // Settings' "Reset all…" asks in a disclosure: Esc put it away no more than a
    // second click did, where Delete's confirmation goes with Esc.
    const asking = document.activeElement && document.activeElement.closest("details.confirm-inline[open]");
    if (asking) {
      event.preventDefault();
      asking.open = false;
      asking.querySelector("summary").focus();
      return;
    }
    const slot = document.getElementById("confirm-slot"); // open wherever focus went since
    if (slot && slot.firstElementChild) {
      event.preventDefault();
      dismissConfirm(slot);
    }
  });
  // An alertdialog keeps focus until answered: Tab from its last control goes to its
  // first, Shift-Tab from its first (or from the dialog itself) to its last.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Tab") return;
    const box = document.querySelector("#confirm-slot [role=alertdialog]");
    if (!box || !box.contains(document.activeElement)) return;
    const controls = box.querySelectorAll("button, a[href], input:not([type=hidden])");
    if (!controls.length) return;
    const first = controls[0];
    const last = controls[controls.length - 1];
    const active = document.activeElement;
    if (!event.shiftKey && active === last) {
      event.preventDefault();
      first.focus();
    } else if (event.shiftKey && (active === first || active === box)) {
      event.preventDefault();
      last.focus();
    }
  });
  document.addEventListener("click", function (event) {
    const cancel = event.target instanceof Element ? event.target.closest("#confirm-slot [data-cancel]") : null;
    if (cancel) {
      event.preventDefault();
      dismissConfirm(cancel.closest("#confirm-slot"));
    }
  });

  // --- focus after a swap ------------------------------------------------------------
  // A swap replaces the element that had focus (a star, Archive): focus goes to
  // its successor, found by the same data-focus-key; a form coming back with
  // errors focuses its first invalid field, scrolled clear of the header. A swap
  // into [data-no-focus] (the settings preview) never moves focus: landing between
  // a Save and the section's answer, it gave focus back to Save, and the section
  // with an invalid field then found nothing lost.
  let lastFocusKey = null; // the last swap's (a target without an id)

  function focusFirstInvalid(root) {
    const field = root.querySelector("[aria-invalid=true]");
    if (!field) return false;
    focusField(field);
    return true;
  }

  function focusField(field) {
    const folded = field.closest("details:not([open])"); // the inspector's "More options"
    if (folded) folded.open = true;
    field.focus({ preventScroll: true });
    field.scrollIntoView({ block: "center" });
  }

  // The search box searches as you type (htmx, `input` on #id_q): not while an input
  // method composes a word, whose keystrokes are not the query yet; once it is done.
  document.addEventListener(
    "input",
    function (event) {
      if (event.isComposing && event.target.id === "id_q") event.stopPropagation();
    },
    true,
  );
  document.addEventListener("compositionend", function (event) {
    if (event.target.id === "id_q") {
      event.target.dispatchEvent(new Event("input", { bubbles: true }));
    }
  });

  // --- unsaved edits ------------------------------------------------------------
  // A form marked data-guard (a memory's new, edit and supersede forms) remembers
  // being changed; leaving the page before saving it (Cancel, a link, closing the
  // tab) asks first. Submitting clears the mark; a form that comes back with errors
  // (or the notice that the memory changed meanwhile) still holds unsaved text.
  function markUnsaved(root) {
    if (!(root instanceof Element)) return;
    const form = root.matches("form[data-guard]") ? root : root.querySelector("form[data-guard]");
    if (form && form.querySelector("[aria-invalid=true], [data-stale]")) form.dataset.unsaved = "1";
  }

  document.addEventListener("input", function (event) {
    const form = event.target instanceof Element ? event.target.closest("form[data-guard]") : null;
    if (form) form.dataset.unsaved = "1";
  });
  document.addEventListener(
    "submit",
    function (event) {
      if (event.target instanceof Element && event.target.matches("form[data-guard]")) {
        delete event.target.dataset.unsaved;
      }
    },
    true,
  );
  window.addEventListener("beforeunload", function (event) {
    if (document.querySelector("form[data-guard][data-unsaved]")) {
      event.preventDefault();
      event.returnValue = ""; // Chromium before 119 asks only when this is set
    }
  });

  // Kept per swap target too: a second swap landing between a swap and its settle
  // (the settings preview, refreshed by the save it answers) found the focus on
  // <body> and wiped the key the first swap's settle needed (seen on a busy machine).
  const focusKeys = new Map();
  // The swap targets answering a save (a POST): a form back with errors starts at its
  // first one even when focus stayed on a field. Enter in a field submits from there,
  // and htmx gave the focus back to that field's successor (same id), so nothing
  // seemed lost and the error was left for the person to find.
  const answersSave = new Set();
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    const active = document.activeElement;
    lastFocusKey = active && active.dataset ? active.dataset.focusKey || null : null;
    const target = event.detail.target;
    if (target && target.id) focusKeys.set(target.id, lastFocusKey);
    const config = event.detail.requestConfig;
    if (target && target.id && config && config.verb === "post") answersSave.add(target.id);
  });

  document.body.addEventListener("htmx:afterSettle", function (event) {
    syncFieldErrors();
    const swapped = event.target; // the new content (or the target, for innerHTML)
    markUnsaved(swapped);
    if (!(swapped instanceof Element) || swapped.closest("[data-no-focus]")) return;
    const lost = !document.activeElement || document.activeElement === document.body;
    const focusKey = swapped.id && focusKeys.has(swapped.id) ? focusKeys.get(swapped.id) : lastFocusKey;
    focusKeys.delete(swapped.id);
    const saved = answersSave.delete(swapped.id);
    const asked = swapped.matches("[data-autofocus]") ? swapped : swapped.querySelector("[data-autofocus]");
    // A result that says which fields to fix (the inspector's: its errors went to
    // their fields, out of band) sends the focus to the first of them.
    const fix = swapped.querySelector("[data-fix-fields]");
    const fixing = fix ? document.getElementById(fix.dataset.fixFields) : null;
    if (asked) {
      asked.focus();
    } else if (fixing) {
      focusFirstInvalid(fixing);
    } else if (swapped.querySelector("[aria-invalid=true]") && (lost || saved)) {
      focusFirstInvalid(swapped);
    } else if (focusKey && lost) {
      // The same control again; paging past the last page, the other pager link.
      const same = document.querySelector('[data-focus-key="' + CSS.escape(focusKey) + '"]');
      const pager = focusKey.startsWith("pager-") ? document.querySelector('[data-focus-key^="pager-"]') : null;
      const next = same || pager;
      if (next) next.focus();
      // A control the swap took away (a row's reset, once its row is back at base):
      // the section's status line, which says what happened, takes focus.
      const said = swapped.querySelector(".notice[role=status][tabindex]");
      if (!next && said) said.focus();
      // A control inside a closed <details> (Reset all, after its reset) cannot
      // take focus: its summary, the step before it, does.
      const folded = next && document.activeElement !== next && next.closest("details");
      if (folded) folded.querySelector("summary").focus();
    }
  });

  // --- the CSRF token of now ---------------------------------------------------------
  // Logging in again (in another tab) rotates the token, and a page rendered before
  // it would send the old one: every htmx request reads the cookie instead (it is not
  // HttpOnly, as Django's docs allow), the header and a form's own field alike.
  function csrfToken() {
    const found = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return found ? decodeURIComponent(found[1]) : "";
  }
  document.body.addEventListener("htmx:configRequest", function (event) {
    const token = csrfToken();
    if (!token) return;
    event.detail.headers["X-CSRFToken"] = token;
    const params = event.detail.parameters;
    if (params && typeof params.has === "function" && params.has("csrfmiddlewaretoken")) {
      params.set("csrfmiddlewaretoken", token);
    } else if (params && "csrfmiddlewaretoken" in params) {
      params.csrfmiddlewaretoken = token;
    }
  });

  // --- the person the page was opened for -------------------------------------------
  // With the token read from the cookie, a tab opened for one person would save as
  // whoever logged in since in another tab: each request names the page's person, and
  // the server refuses a change from a page opened for someone else (409).
  document.body.addEventListener("htmx:configRequest", function (event) {
    const meta = document.querySelector('meta[name="console-person"]');
    if (meta && meta.content) event.detail.headers["X-Console-Person"] = meta.content;
  });

  // --- a number the browser cannot read ---------------------------------------------
  // A number input holding what the browser cannot read ("1e") is sent blank, which the
  // form took for no value at all ("Importance is required."; a setting's base value):
  // each request names such fields (`UNREADABLE` in console/forms.py), and the form
  // says the value is not a number.
  document.body.addEventListener("htmx:configRequest", function (event) {
    const params = event.detail.parameters;
    const sent = event.detail.unfilteredParameters || params; // blanks kept (see below)
    if (!params || typeof params.append !== "function" || !sent) return;
    document.querySelectorAll("input[type=number]").forEach(function (field) {
      if (field.name && field.validity.badInput && sent.has(field.name)) {
        params.append("unreadable", field.name);
      }
    });
    // A GET changes nothing (the settings preview): it goes even with a number the
    // browser refuses ("1.5" in a whole-number field, "1e"), whose refusal stopped the
    // preview without a word; the answer says what is wrong beside the field.
    if (event.detail.verb === "get" && event.detail.errors) {
      event.detail.errors = event.detail.errors.filter(function (error) {
        return !error.elt.matches("input[type=number]");
      });
    }
  });

  // --- addresses worth sharing ------------------------------------------------------
  // A filter form's GET (search, inspector) put every field in the address, set or not:
  // "/?q=x&project=&since=&semantic=false&semantic=on". A field left empty means what
  // its absence means, and a toggle sent on (its hidden "false" and the box's "on") is
  // its default: both stay out, so the address names only what was chosen.
  document.body.addEventListener("htmx:configRequest", function (event) {
    const params = event.detail.parameters;
    if (event.detail.verb !== "get" || !params || typeof params.getAll !== "function") return;
    Array.from(new Set(params.keys())).forEach(function (name) {
      const values = params.getAll(name);
      const toggledOn = values.length === 2 && values[0] === "false" && values[1] === "on";
      if (toggledOn || values.every(function (v) { return v === ""; })) params.delete(name);
    });
  });

  // --- a request that failed says so -------------------------------------------------
  // htmx swaps nothing for an error answer: without this a star, a save or an archive
  // that the server refused would look like a click that did nothing.
  // `acted`: the element whose request failed; `login`: the login page when the
  // session ended (the notice then offers it in a new tab, where logging in keeps this
  // page and its text; "Reload the page" there contradicted its own advice).
  function requestFailed(message, acted, login) {
    let box = document.getElementById("request-error");
    if (!box) {
      box = document.createElement("div");
      box.id = "request-error";
      box.className = "request-error";
      box.setAttribute("role", "alert");
      const text = document.createElement("p");
      const again = document.createElement("a");
      again.className = "button";
      again.target = "_blank";
      again.rel = "noopener";
      again.textContent = "Log in in a new tab";
      const reload = document.createElement("button");
      reload.type = "button";
      reload.textContent = "Reload the page";
      reload.addEventListener("click", function () {
        window.location.reload();
      });
      const close = document.createElement("button");
      close.type = "button";
      close.className = "quiet";
      close.textContent = "Dismiss";
      close.addEventListener("click", function () {
        box.hidden = true;
        document.body.style.paddingBottom = "";
      });
      box.append(text, again, reload, close);
      document.body.append(box);
    }
    box.querySelector("p").textContent = message;
    if (login) box.dataset.loggedOut = "";
    else delete box.dataset.loggedOut;
    const again = box.querySelector("a");
    again.hidden = !login;
    if (login) again.href = login;
    box.querySelector("button").hidden = Boolean(login);
    box.hidden = false;
    // Room under the page for the fixed notice: on a phone it covered the form's Save
    // and Cancel, however far the page was scrolled.
    document.body.style.paddingBottom = box.offsetHeight + 32 + "px";
    // Focus stays where the person was (a disabled Save had dropped it to <body>), and
    // that control is scrolled clear of the notice: on a phone it sat under it.
    window.setTimeout(function () {
      let here = document.activeElement;
      if ((!here || here === document.body) && acted instanceof Element && acted.isConnected) {
        here = acted.matches("form") ? acted.querySelector("[type=submit]") : acted;
        if (here) here.focus({ preventScroll: true });
      }
      if (!here || here === document.body) return;
      const under = here.getBoundingClientRect().bottom - box.getBoundingClientRect().top + 16;
      if (under > 0) window.scrollBy(0, under);
    }, 0);
  }
  // Logged in again (in another tab), the next request here goes through: the notice
  // that said "logged out" went on saying it over the results it answered.
  document.body.addEventListener("htmx:afterRequest", function (event) {
    const box = document.getElementById("request-error");
    if (!box || box.hidden || !("loggedOut" in box.dataset) || !event.detail.successful) return;
    box.hidden = true;
    document.body.style.paddingBottom = "";
  });
  // A save that failed saved nothing: its form's text is unsaved again, so leaving the
  // page (the notice's own "Reload the page", Cancel, a link) still asks first.
  function unsavedAgain(elt) {
    const form = elt instanceof Element ? elt.closest("form[data-guard]") : null;
    if (form) form.dataset.unsaved = "1";
  }
  // --- a session that ended under unsaved text ------------------------------------
  // An htmx request once the session ended (a log-out in another tab, an expiry) is
  // answered 403 with HX-Redirect to the login. With unsaved text on the page (a
  // guarded form: a memory's, the settings) following it would throw the text away:
  // stay, keep the text marked unsaved, and say what to do.
  document.body.addEventListener("htmx:beforeOnLoad", function (event) {
    const xhr = event.detail.xhr;
    if (!xhr || xhr.status !== 403 || !xhr.getResponseHeader("HX-Redirect")) return;
    unsavedAgain(event.detail.elt); // its submit had cleared the mark
    const unsaved = document.querySelector("form[data-guard][data-unsaved]");
    // A search typed as the session ended: the login page took the letters sent first
    // as the search to go back to, and the rest of what was typed as its Username.
    const elt = event.detail.elt;
    const here = document.activeElement;
    const typedInto =
      here !== null && textEntry(here) && elt instanceof Element && (elt === here || elt.contains(here));
    if (!unsaved && !typedInto) return; // nothing to lose
    event.preventDefault();
    requestFailed(
      unsaved
        ? "You are logged out (in another tab, or the session ended), so nothing was saved. " +
            "Your text is still here: log in again in another tab, then come back and save."
        : "You are logged out (in another tab, or the session ended). What you typed is " +
            "still here: log in again in another tab, then come back and go on.",
      elt,
      xhr.getResponseHeader("HX-Redirect"),
    );
  });
  document.body.addEventListener("htmx:responseError", function (event) {
    const status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 403 && event.detail.xhr.getResponseHeader("HX-Redirect")) return; // to the login
    unsavedAgain(event.detail.elt);
    let message;
    if (status === 403) {
      message = "This page is out of date (you logged in again, or it was open too long), so nothing was changed. Reload it to go on.";
    } else if (status === 409 && event.detail.xhr.getResponseHeader("X-Console-Person-Now")) {
      const now = decodeURIComponent(event.detail.xhr.getResponseHeader("X-Console-Person-Now"));
      message = "This page was opened before someone else logged in: " + now + " is logged in now (in another tab), so nothing was saved. Your text is still here: copy it, or log in as yourself again in another tab, then come back and save.";
    } else if (status === 404) {
      message = "That is no longer here (deleted, or moved out of your projects, perhaps in another tab), so nothing was changed. Reload the page to see what is.";
    } else if (status >= 500) {
      message = "The server failed on that (error " + status + "), so nothing was changed. Try again in a moment, or reload the page.";
    } else {
      message = "The server refused that (answer " + status + "), so nothing was changed. Reload the page and try again.";
    }
    requestFailed(message, event.detail.elt);
  });
  document.body.addEventListener("htmx:sendError", function (event) {
    unsavedAgain(event.detail.elt);
    requestFailed("The server could not be reached, so nothing was changed. Try again when it is back.", event.detail.elt);
  });

  // --- the settings preview: the last asked is the one shown -------------------------
  // Two elements ask for it (the form as values change, the preview itself after a
  // save), and a save replaces the form, so no hx-sync orders them: a preview of the
  // values before a reset, answered late, overwrote the reset's own.
  let previewAsked = 0;
  let previewShown = 0;
  document.body.addEventListener("htmx:beforeRequest", function (event) {
    if (event.detail.target && event.detail.target.id === "preview") {
      event.detail.xhr.previewNumber = ++previewAsked;
    }
  });
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "preview") return;
    const number = event.detail.xhr.previewNumber || 0;
    if (number < previewShown) event.detail.shouldSwap = false;
    else previewShown = number;
  });

  // --- loading ----------------------------------------------------------------------
  // htmx marks indicators with .htmx-request; aria-busy tells assistive tech too.
  document.body.addEventListener("htmx:beforeRequest", function (event) {
    const target = event.detail.target;
    if (target && target.setAttribute) target.setAttribute("aria-busy", "true");
  });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    const target = event.detail.target;
    if (target && target.removeAttribute) target.removeAttribute("aria-busy");
  });

  // --- field errors sent out of band --------------------------------------------------
  // The settings preview and the inspector send each field's error to its slot; the
  // field (each box of a group of checkboxes) says so.
  function syncFieldErrors() {
    document.querySelectorAll(".field-error[id^='err-']").forEach(function (error) {
      const said = !error.hidden && error.textContent.trim();
      document.querySelectorAll('[aria-describedby~="' + CSS.escape(error.id) + '"]').forEach(function (field) {
        if (said) field.setAttribute("aria-invalid", "true");
        else field.removeAttribute("aria-invalid");
        const wrap = field.closest(".field");  // its red border goes with the error
        if (wrap) wrap.classList.toggle("invalid", Boolean(said));
      });
    });
  }

  // --- a save the browser stopped ----------------------------------------------------
  // A save that asks the browser first (hx-validate: the settings' Save, and Enter in a
  // setting) sends nothing while a number field holds what it refuses ("1e", "1.5" in a
  // whole-number field), rightly, as a blank would mean the base value; but it said
  // nothing either. Each refused field says why in its slot, in its form's own words
  // (data-invalid-message, console/forms.py), and the first one takes the focus.
  function errorSlot(field) {
    const ids = (field.getAttribute("aria-describedby") || "").split(/\s+/);
    const slots = ids.map(function (id) { return id ? document.getElementById(id) : null; });
    return slots.find(function (el) { return el && el.classList.contains("field-error"); }) || null;
  }
  function sayRefused(field, message) {
    const slot = errorSlot(field);
    if (!slot) return false;
    slot.textContent = field.dataset.invalidMessage || message;
    slot.hidden = false;
    slot.setAttribute("role", "alert");
    slot.dataset.refused = "";
    return true;
  }
  document.body.addEventListener("htmx:validation:halted", function (event) {
    const refused = (event.detail.errors || []).filter(function (error) {
      return sayRefused(error.elt, error.message);
    });
    if (!refused.length) return;
    syncFieldErrors();
    focusField(refused[0].elt);
  });
  // Once the browser reads the value again, the word said here goes (the settings
  // preview, where there is one, then says the rest; a save, everywhere).
  document.addEventListener("input", function (event) {
    const slot = event.target instanceof Element ? errorSlot(event.target) : null;
    if (!slot || !("refused" in slot.dataset) || !event.target.validity.valid) return;
    delete slot.dataset.refused;
    slot.textContent = "";
    slot.hidden = true;
    slot.removeAttribute("role");
    syncFieldErrors();
  });

  // A value the browser refuses inside a closed <details> ("More options"): open it,
  // or the browser cannot show the field and the form silently does not submit.
  // The inspector's Run is the browser's own check: its bubble said why in the
  // browser's words and went after a few seconds, leaving the field unmarked. The
  // field's slot says it too, in the form's words, until the value is read again.
  document.addEventListener("invalid", function (event) {
    const closed = event.target instanceof Element && event.target.closest("details:not([open])");
    if (closed) closed.open = true;
    if (event.target instanceof HTMLInputElement && event.target.form && !event.target.form.noValidate &&
        sayRefused(event.target, event.target.validationMessage)) {
      syncFieldErrors();
    }
  }, true);

  // --- scrollable boxes --------------------------------------------------------------
  // A code block or table that scrolls sideways must be reachable by keyboard. A
  // markdown table is its own scroller (display: block): it takes the focus as it is,
  // since a role would hide that it is a table.
  function scrollables(root) {
    root.querySelectorAll("pre, .table-wrap, .verbatim, .markdown table").forEach(function (el) {
      const scrolls = el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight;
      if (!scrolls || el.hasAttribute("tabindex")) return;
      el.setAttribute("tabindex", "0");
      if (el.tagName !== "PRE" && el.tagName !== "TABLE" && !el.hasAttribute("role")) {
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", el.dataset.label || "Scrollable table");
      }
    });
  }
  scrollables(document);
  document.body.addEventListener("htmx:afterSettle", function (event) {
    if (event.target instanceof Element) scrollables(event.target);
  });

  // --- history: scroll and focus come back with Back ----------------------------------
  // Pages are never cached (Cache-Control: no-store), so Back reloads them;
  // the result a person left from is focused again at the same scroll.
  const SCROLL_KEY = "recall-scroll:";
  if ("scrollRestoration" in history) history.scrollRestoration = "manual";

  window.addEventListener("pagehide", function () {
    const active = document.activeElement;
    const state = {
      y: window.scrollY,
      focus: active && active.id && active.id !== "main" ? active.id : "",
    };
    try {
      window.sessionStorage.setItem(SCROLL_KEY + location.href, JSON.stringify(state));
    } catch (err) {
      // Nothing to restore next time.
    }
  });

  function restore() {
    const nav = performance.getEntriesByType("navigation")[0];
    if (!nav || nav.type !== "back_forward") return;
    let state = null;
    try {
      state = JSON.parse(window.sessionStorage.getItem(SCROLL_KEY + location.href) || "null");
    } catch (err) {
      state = null;
    }
    if (!state) return;
    const focus = state.focus ? document.getElementById(state.focus) : null;
    if (focus) focus.focus({ preventScroll: true });
    window.scrollTo(0, state.y);
  }

  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      // A page kept in the back-forward cache may show what was since deleted.
      window.location.reload();
      return;
    }
    restore();
  });

  // A full page that came back with errors (a plain POST) starts at its first one.
  const invalidForm = document.querySelector("form [aria-invalid=true]");
  if (invalidForm) focusFirstInvalid(invalidForm.form || document.body);
  markUnsaved(document.body);
})();
