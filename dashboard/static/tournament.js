// Live tournament progress: poll the status twin; when results change, refresh the summary
// line (started, finished, the seed once every set is played) and the tables in place from the
// server-rendered page (already escaped there), without reloading the page.
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box) return;
  var POLL_MS = 3000;
  var done = box.dataset.done;
  var failed = box.dataset.failed;

  function set(id, value) {
    var node = document.getElementById(id);
    if (node) node.textContent = String(value);
  }

  function refreshTables() {
    return fetch(window.location.href, { headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["summary", "results"].forEach(function (id) {
          var fresh = doc.getElementById(id);
          var current = document.getElementById(id);
          if (fresh && current) current.replaceWith(document.importNode(fresh, true));
        });
      });
  }

  function poll() {
    fetch(box.dataset.statusUrl)
      .then(function (r) { return r.json(); })
      .then(function (t) {
        var p = t.progress;
        set("progress-done", p.done);
        set("progress-total", p.total);
        set("progress-running", p.running);
        set("progress-queued", p.queued);
        set("progress-failed", p.failed);
        set("pace", t.pace ? "· " + t.pace : "");
        var bar = document.getElementById("progress-bar");
        if (bar) bar.style.width = (100 * p.fraction).toFixed(1) + "%";
        var state = document.getElementById("state");
        if (state) { state.textContent = t.state; state.className = "state " + t.state; }
        // In UTC, as every time the server writes on the page (the reader's clock may differ).
        set("live", "· updated " + new Date().toISOString().slice(11, 19) + " UTC");
        set("waiting", t.waiting ? "waiting: " + t.waiting : "");
        var changed = String(p.done) !== done || String(p.failed) !== failed;
        done = String(p.done);
        failed = String(p.failed);
        var next = function () {
          if (t.state === "queued" || t.state === "running") setTimeout(poll, POLL_MS);
        };
        if (changed) refreshTables().then(next, next); else next();
      })
      .catch(function () { setTimeout(poll, POLL_MS * 3); });
  }

  if (box.dataset.state === "queued" || box.dataset.state === "running") setTimeout(poll, POLL_MS);
})();
