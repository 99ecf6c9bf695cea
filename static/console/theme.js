// Applies the theme a person chose (palette: "Toggle theme") before the first
// paint; without a choice the page follows the system. Loaded in <head>, not
// deferred, so dark pages never flash light. No inline script: the CSP forbids it.
(function () {
  "use strict";
  try {
    const chosen = window.localStorage.getItem("recall-theme");
    if (chosen === "dark" || chosen === "light") document.documentElement.dataset.theme = chosen;
  } catch (err) {
    // Storage may be off (private mode): follow the system.
  }
})();
