// hoist console: a page marked live reads itself again when the server
// says (server-sent events on /events) that a session it shows appeared
// or grew, or a held frame came or went. The server draws every page;
// this only swaps in the new <main>.
(function () {
  "use strict";
  // Every post carries the console's form token (docs/console.md, "Who
  // may connect"), which only its own pages know: a form without the
  // field gets it as it is sent, a fetch as the header X-Hoist-Csrf.
  var meta = document.querySelector('meta[name="hoist-csrf"]');
  var csrf = meta ? meta.content : "";
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if ((form.getAttribute("method") || "").toLowerCase() !== "post" || form.querySelector('input[name="csrf"]')) return;
    var f = document.createElement("input");
    f.type = "hidden"; f.name = "csrf"; f.value = csrf;
    form.appendChild(f);
  }, true);
  // A form marked data-swap posts in the background and swaps in the page
  // it leads to, so that a held frame's buttons do not reload the page.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.hasAttribute("data-swap") || !window.fetch) return;
    e.preventDefault();
    var body = new URLSearchParams(new FormData(form, e.submitter));
    // getAttribute: a control named "action" would shadow form.action.
    fetch(form.getAttribute("action"), { method: "POST", body: body, credentials: "same-origin", headers: { "X-Hoist-Csrf": csrf } })
      .then(function (r) {
        return r.text().then(function (text) {
          if (r.ok) return swap(text);
          // A refusal is plain text: show it above the page.
          var p = document.createElement("p");
          p.className = "error";
          p.textContent = text;
          var main = document.querySelector("main");
          if (main) main.prepend(p);
        });
      });
  });
  function swap(text) {
    var doc = new DOMParser().parseFromString(text, "text/html");
    var fresh = doc.querySelector("main"), old = document.querySelector("main");
    if (fresh && old) old.replaceWith(fresh);
    if (doc.body && doc.body.dataset.gen) document.body.dataset.gen = doc.body.dataset.gen;
    document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
  }
  var live = document.body.dataset.live;
  if (!live || !window.EventSource) return;
  var busy = false, again = false, held = false;
  // editing: a person is typing into the page (a value to inject), whose
  // text a swap would throw away; the reload waits until they leave it.
  function editing() {
    var a = document.activeElement;
    return a && (a.tagName === "TEXTAREA" || a.tagName === "INPUT") && a.closest("main");
  }
  document.addEventListener("focusout", function () {
    if (held) { held = false; setTimeout(reload, 0); }
  });
  document.addEventListener("submit", function () { held = false; });
  function reload() {
    if (editing()) { held = true; return; }
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.text(); })
      .then(swap)
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; reload(); }
      });
  }
  var es = new EventSource("/events");
  // The stream opens (and reopens) with the count of changes so far: a
  // page drawn before one of them reads itself again.
  es.addEventListener("gen", function (e) {
    if (e.data !== document.body.dataset.gen) reload();
  });
  es.addEventListener("session", function (e) {
    if (live === "list" || e.data === "" || e.data === live) reload();
  });
})();
