// Live progress of a scan over server-sent events. The page reloads itself when
// the scan reaches a terminal status, so the server renders the results.
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box || !window.EventSource) return;
  var bar = box.querySelector("[data-bar]");
  var status = box.querySelector("[data-status]");
  var count = box.querySelector("[data-count]");
  var wait = box.querySelector("[data-wait]");
  var done = box.querySelector(".bar-done");
  var failed = box.querySelector(".bar-failed");
  // datetime formats an RFC 3339 time as the server's datetime does: "23 Nov 2026, 12:40 UTC".
  function datetime(v) {
    var t = new Date(v);
    if (isNaN(t)) return v;
    var months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    var two = function (n) { return (n < 10 ? "0" : "") + n; };
    return t.getUTCDate() + " " + months[t.getUTCMonth()] + " " + t.getUTCFullYear() + ", " +
      two(t.getUTCHours()) + ":" + two(t.getUTCMinutes()) + " UTC";
  }
  var es = new EventSource(box.getAttribute("data-events"));
  es.addEventListener("status", function (e) {
    var d;
    try { d = JSON.parse(e.data); } catch (err) { return; }
    if (d.status === "deleted") { // the site was deleted while the page was open
      es.close();
      status.textContent = "deleted";
      status.className = "tag none";
      bar.style.display = "none";
      count.textContent = d.message + ", with its scans. ";
      var back = document.createElement("a");
      back.href = "/";
      back.textContent = "Back to your sites";
      count.appendChild(back);
      if (wait) wait.hidden = true;
      var hint = box.querySelector(".hint");
      if (hint) hint.hidden = true;
      return;
    }
    status.textContent = d.status;
    status.className = "tag " + ({ complete: "good", failed: "poor", running: "ni" }[d.status] || "none");
    if (d.pagesTotal > 0) {
      var ok = d.pagesDone - d.pagesFailed;
      bar.setAttribute("viewBox", "0 0 " + d.pagesTotal + " 1");
      done.setAttribute("width", ok);
      failed.setAttribute("x", ok);
      failed.setAttribute("width", d.pagesFailed);
      count.textContent = d.progress;
    } else {
      count.textContent = d.status === "queued" ? "Waiting for a worker to pick it up…" : "Finding pages…";
    }
    if (wait) {
      wait.hidden = !d.waiting;
      if (d.waiting) {
        wait.querySelector("[data-wait-at]").textContent = datetime(d.waiting.runAt);
        wait.querySelector("[data-wait-reason]").textContent = d.waiting.reason;
      }
    }
    if (d.status === "complete" || d.status === "failed") {
      es.close();
      window.location.reload();
    }
  });
})();
