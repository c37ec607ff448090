// hoist console: a page marked live reads itself again when the server
// says (server-sent events on /events) that a session it shows appeared
// or grew. The server draws every page; this only swaps in the new <main>.
(function () {
  "use strict";
  var live = document.body.dataset.live;
  if (!live || !window.EventSource) return;
  var busy = false, again = false;
  function reload() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector("main"), old = document.querySelector("main");
        if (fresh && old) old.replaceWith(fresh);
        document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; reload(); }
      });
  }
  var es = new EventSource("/events");
  es.addEventListener("session", function (e) {
    if (live === "list" || e.data === "" || e.data === live) reload();
  });
})();
