// Skiff console: the only script. Pages work without it; it adds two things.
// 1. Elements with data-refresh="<console path>" are reloaded every data-interval ms (the live
//    charts). URLs are built from location.origin so a page opened as http://user:pw@host/
//    still fetches (fetch refuses URLs that carry credentials).
// 2. Forms with data-confirm="<question>" ask before they submit (delete, reset offsets).
"use strict";
(function () {
  function refresh(el) {
    var path = el.getAttribute("data-refresh");
    if (!path || path.charAt(0) !== "/") return;
    fetch(location.origin + path, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) el.innerHTML = html; })
      .catch(function () { /* the next tick retries */ });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-refresh]").forEach(function (el) {
      var every = parseInt(el.getAttribute("data-interval") || "5000", 10);
      if (every >= 1000) setInterval(function () { refresh(el); }, every);
    });
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (e) {
        if (!window.confirm(form.getAttribute("data-confirm"))) e.preventDefault();
      });
    });
  });
})();
