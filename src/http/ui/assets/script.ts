/**
 * The dashboard's one script, loaded with the page's CSP nonce. Conveniences only: relative times
 * kept current, copy buttons (hidden without it), and the overview's auto-refresh. It reads
 * `data-*` attributes and writes `textContent`: it never builds HTML.
 */
export const DASHBOARD_JS = `"use strict";
(function () {
  function span(seconds) {
    if (seconds < 60) return Math.floor(seconds) + " s";
    if (seconds < 3600) return Math.floor(seconds / 60) + " min";
    if (seconds < 86400) return Math.floor(seconds / 3600) + " h";
    return Math.floor(seconds / 86400) + " d";
  }
  function relative(ms) {
    var seconds = Math.round((Date.now() - ms) / 1000);
    if (Math.abs(seconds) < 5) return "just now";
    return seconds > 0 ? span(seconds) + " ago" : "in " + span(-seconds);
  }
  function refreshTimes() {
    document.querySelectorAll("time[data-relative]").forEach(function (element) {
      var ms = Date.parse(element.getAttribute("datetime") || "");
      if (!isNaN(ms)) element.textContent = relative(ms);
    });
  }
  refreshTimes();
  setInterval(refreshTimes, 15000);

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var done = function (text) {
        button.textContent = text;
        setTimeout(function () { button.textContent = "Copy"; }, 2000);
      };
      if (!navigator.clipboard) return done("Copy failed");
      navigator.clipboard.writeText(button.getAttribute("data-copy") || "").then(
        function () { done("Copied"); },
        function () { done("Copy failed"); }
      );
    });
  });

  var every = Number(document.body.getAttribute("data-refresh"));
  if (every > 0) {
    setInterval(function () {
      if (document.visibilityState === "visible") location.reload();
    }, every * 1000);
  }
})();
`;
