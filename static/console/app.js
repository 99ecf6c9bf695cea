// The console's own behaviour: the Ctrl/Cmd-K palette and keyboard navigation.
// No inline scripts (the CSP allows only 'self'); htmx does the rest.
(function () {
  "use strict";

  // --- palette ---------------------------------------------------------------
  // Each keystroke fetches the palette endpoint (the FTS fast path). Requests
  // carry a sequence number and the previous one is aborted, so a slow, stale
  // response never overwrites a newer one.
  const dialog = document.getElementById("palette");
  const input = document.getElementById("palette-q");
  const results = document.getElementById("palette-results");
  let seq = 0;
  let controller = null;
  let timer = null;

  function options() {
    return results ? Array.from(results.querySelectorAll(".pal-item")) : [];
  }

  function select(index) {
    const items = options();
    items.forEach(function (el, i) {
      el.setAttribute("aria-selected", i === index ? "true" : "false");
      el.classList.toggle("selected", i === index);
    });
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
    if (!q.trim()) {
      results.replaceChildren();
      results.dataset.q = "";
      return;
    }
    const url = input.dataset.url + "?" + new URLSearchParams({ q: q }).toString();
    fetch(url, {
      headers: { "HX-Request": "true" },
      credentials: "same-origin",
      signal: controller.signal,
    })
      .then(function (response) {
        if (response.status === 403 && response.headers.get("HX-Redirect")) {
          window.location.href = response.headers.get("HX-Redirect");
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null || mine !== seq) return; // stale: a newer request owns the list
        results.innerHTML = html; // server-rendered, escaped; scripts never run from innerHTML
        results.dataset.q = q;
        select(options().length ? 0 : -1);
      })
      .catch(function (err) {
        if (err && err.name !== "AbortError") results.dataset.error = String(err);
      });
  }

  function openPalette() {
    if (!dialog || dialog.open) return;
    dialog.showModal();
    input.select();
    input.focus();
    if (input.value.trim()) fetchPalette();
  }

  function closePalette() {
    if (dialog && dialog.open) dialog.close();
  }

  if (dialog && input && results) {
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(fetchPalette, 0);
    });
    input.addEventListener("keydown", function (event) {
      const items = options();
      const current = selectedIndex();
      if (event.key === "ArrowDown") {
        event.preventDefault();
        select(items.length ? (current + 1) % items.length : -1);
      } else if (event.key === "ArrowUp") {
        event.preventDefault();
        select(items.length ? (current - 1 + items.length) % items.length : -1);
      } else if (event.key === "Enter") {
        event.preventDefault();
        const chosen = items[current >= 0 ? current : 0];
        if (chosen) window.location.href = chosen.href;
        else if (input.value.trim()) input.form.submit();
      } else if (event.key === "Escape") {
        event.preventDefault();
        closePalette();
      }
    });
    results.addEventListener("mousemove", function (event) {
      const item = event.target.closest(".pal-item");
      if (item) select(options().indexOf(item));
    });
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

  function typing(el) {
    if (!el) return false;
    const tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }

  function hitLinks() {
    return Array.from(document.querySelectorAll("[data-hits] .hit-title"));
  }

  function moveHit(step) {
    const links = hitLinks();
    if (!links.length) return false;
    const at = links.indexOf(document.activeElement);
    const next = at < 0 ? (step > 0 ? 0 : links.length - 1) : at + step;
    if (next < 0 || next >= links.length) return true;
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
})();
