// Live events: the console's SSE stream (same-origin, the sign-in cookie goes along).
(function () {
  "use strict";
  var body = document.getElementById("events");
  var state = document.getElementById("events-state");
  var empty = document.getElementById("events-empty");  // "waiting for the first event"
  var source = new EventSource("/console/events/stream");

  function cell(text, cls) {
    var td = document.createElement("td");
    td.textContent = text == null ? "" : String(text);
    if (cls) { td.className = cls; }
    return td;
  }

  function show(message) {
    var e = JSON.parse(message.data);
    var tr = document.createElement("tr");
    tr.className = "new";
    tr.appendChild(cell(e.at.replace("T", " ").slice(0, 19), "mono"));
    tr.appendChild(cell(e.type));
    tr.appendChild(cell(e.namespace, "mono"));
    var td = document.createElement("td");
    if (e.memory_id) {
      var a = document.createElement("a");
      a.href = "/console/memories/" + encodeURIComponent(e.memory_id);
      a.textContent = e.memory_id;
      a.className = "mono";
      td.appendChild(a);
    }
    tr.appendChild(td);
    tr.appendChild(cell(JSON.stringify(e.payload), "mono muted"));
    body.insertBefore(tr, body.firstChild);
    empty.hidden = true;
  }

  source.onopen = function () { state.textContent = "live"; };
  source.onerror = function () {
    // the server ends the stream when the session ends; its next try then gets a 401
    state.textContent = source.readyState === EventSource.CLOSED ? "closed (sign in again)"
      : "reconnecting…";
  };
  source.onmessage = show;
  [
    "memory.added", "memory.updated", "memory.deduplicated", "memory.dropped",
    "memory.deleted", "memory.searched", "memory.extracted", "memory.managed",
    "memory.pinned", "memory.unpinned", "memory.restored", "memory.consolidated",
    "context.built",
    "session.summarized", "history.appended"
  ].forEach(function (type) { source.addEventListener(type, show); });
}());
