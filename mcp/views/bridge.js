// SitePulse's side of the MCP Apps host protocol, written by hand: JSON-RPC 2.0 over
// postMessage with the host window. It asks ui/initialize, says ui/notifications/initialized,
// draws each ui/notifications/tool-result with window.draw, follows the host's theme and
// locale (ui/notifications/host-context-changed) and reports its height
// (ui/notifications/size-changed). It fetches nothing: the data is the tool result.
"use strict";
var SP = (function () {
  var host = window.parent, nextId = 1, pending = {}, locale = navigator.language || "en";
  function send(m) { host.postMessage(m, "*"); }
  function request(method, params) {
    var id = nextId++;
    send({ jsonrpc: "2.0", id: id, method: method, params: params });
    return new Promise(function (ok, fail) { pending[id] = { ok: ok, fail: fail }; });
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function context(c) {
    if (!c) return;
    if (c.theme === "light" || c.theme === "dark") document.documentElement.setAttribute("data-theme", c.theme);
    if (typeof c.locale === "string" && c.locale) locale = c.locale;
  }
  var last = null;
  function draw(result) {
    last = result;
    var root = document.getElementById("app");
    if (!result || result.isError) {
      var t = result && result.content && result.content[0] && result.content[0].text;
      root.innerHTML = '<p class="note">' + esc(t || "No result.") + "</p>";
    } else {
      root.innerHTML = window.draw(result.structuredContent || {}, (result._meta || {})["io.sitepulse/view"] || {});
    }
    resized();
  }
  var lastHeight = 0;
  function resized() {
    var h = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (h !== lastHeight) { lastHeight = h; notify("ui/notifications/size-changed", { height: h }); }
  }
  window.addEventListener("message", function (ev) {
    if (ev.source !== host) return;
    var m = ev.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (!m.method && m.id != null && pending[m.id]) {
      var p = pending[m.id]; delete pending[m.id];
      if (m.error) p.fail(m.error); else p.ok(m.result);
      return;
    }
    switch (m.method) {
      case "ui/notifications/tool-result": draw(m.params); return;
      case "ui/notifications/host-context-changed": context(m.params); if (last) draw(last); return;
      case "ui/resource-teardown": case "ping": send({ jsonrpc: "2.0", id: m.id, result: {} }); return;
    }
    if (m.id != null && m.method) send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
  });
  if (window.ResizeObserver) new ResizeObserver(resized).observe(document.documentElement);
  request("ui/initialize", {
    appInfo: { name: "sitepulse", version: "0.1.0" },
    appCapabilities: { availableDisplayModes: ["inline"] },
    protocolVersion: "2026-01-26"
  }).then(function (r) { context(r && r.hostContext); notify("ui/notifications/initialized", {}); });

  // esc writes any text into HTML as text: every string from a site (titles, paths, URLs,
  // reasons) goes through it.
  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function num(v, digits) {
    return new Intl.NumberFormat(locale, { maximumFractionDigits: digits || 0, minimumFractionDigits: digits || 0 }).format(v);
  }
  function date(iso) {
    var d = new Date(iso);
    return isNaN(d) ? "" : new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short" }).format(d);
  }
  // band is a 0-100 score's rating class: good from 90, poor below 50.
  function band(score) { return score == null ? "none" : score >= 90 ? "good" : score >= 50 ? "ok" : "poor"; }
  // vital writes a vital as people read it: seconds from 1000 ms, CLS with two decimals.
  function vital(v, unit) {
    if (v == null) return "–";
    if (unit === "") return num(v, 2);
    return v >= 1000 ? num(v / 1000, 1) + "\u202fs" : num(v) + "\u202fms";
  }
  // conf is a cause's confidence as a small tag ("low confidence"), with what it means as its
  // title, as the scan page shows it; "" when the cause names no change.
  var meanings = { high: "the changes named account for 60% or more of the metric's change",
    medium: "the changes named account for 30 to 60% of the metric's change; something else moved it too",
    low: "the changes named account for less than 30% of the metric's change; the largest change found, not the whole story" };
  function conf(level) {
    if (!meanings[level]) return "";
    return " <span class=\"conf conf-" + level + "\" title=\"" + esc(meanings[level]) + "\">" + level + " confidence</span>";
  }
  return { esc: esc, num: num, date: date, band: band, vital: vital, conf: conf };
})();
