/* Loaded first: any script error becomes a visible banner and <html data-errors="N">,
   besides the browser's own console message. */
(function () {
  "use strict";
  var count = 0;
  document.documentElement.setAttribute("data-errors", "0");
  window.protolabError = function (message) {
    count += 1;
    document.documentElement.setAttribute("data-errors", String(count));
    var show = function () {
      var banner = document.getElementById("error-banner");
      if (!banner) { return; }
      banner.hidden = false;
      var li = document.createElement("li");
      li.textContent = message;
      banner.querySelector("ul").appendChild(li);
    };
    if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", show); } else { show(); }
    if (window.console && console.error) { console.error("protolab report: " + message); }
  };
  window.onerror = function (message, source, line) {
    window.protolabError(String(message) + (line ? " (line " + line + ")" : ""));
    return false;
  };
  window.addEventListener("unhandledrejection", function (e) {
    window.protolabError("unhandled rejection: " + (e.reason && e.reason.message ? e.reason.message : e.reason));
  });
})();
