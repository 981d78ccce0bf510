// sortie dashboard: refreshes the parts of a page marked data-live in
// place, and shows and follows a job's log. Everything works without it
// but the live refresh and the log.
"use strict";

(function () {
  const poll = Number(document.body.dataset.poll) || 3000;

  // A form the server refused: its first field with a problem has the
  // focus, and so is in view, with its problem read out beside it.
  const invalid = document.querySelector('form [aria-invalid="true"]');
  if (invalid) invalid.focus();

  // refresh replaces a live region's content with the server's newest,
  // keeping the focus on the element (by id) that had it.
  async function refresh(region) {
    if (document.hidden) return;
    const focused = document.activeElement && region.contains(document.activeElement) ? document.activeElement.id : "";
    let resp;
    try {
      resp = await fetch(region.dataset.live, { credentials: "same-origin", headers: { "Accept": "text/html" } });
    } catch (e) {
      return; // the server is away: try again at the next tick
    }
    if (resp.status === 401) {
      window.location.reload(); // the session ended: the page asks to sign in
      return;
    }
    if (!resp.ok) return;
    const html = await resp.text();
    const wasFinal = region.dataset.final === "true";
    // A folded part the reader opened stays open.
    const opened = Array.from(region.querySelectorAll("details[open][id]"), function (d) { return d.id; });
    region.innerHTML = html;
    opened.forEach(function (id) {
      const d = document.getElementById(id);
      if (d) d.open = true;
    });
    if (focused) {
      const el = document.getElementById(focused);
      if (el) el.focus();
    }
    // A job that has just ended: its page is redrawn whole, as its actions
    // (retry in place of cancel) change.
    if (!wasFinal && region.id === "job" && region.querySelector("[data-final-now]")) {
      window.location.reload();
    }
  }

  document.querySelectorAll("[data-live]").forEach(function (region) {
    if (region.dataset.final === "true") return;
    const timer = setInterval(function () {
      if (region.dataset.final === "true") { clearInterval(timer); return; }
      refresh(region);
    }, poll);
  });

  // The log: the API's stream of newline-delimited JSON events.
  const pre = document.getElementById("log");
  if (!pre) return;
  const title = document.getElementById("log-title");
  const follow = document.getElementById("log-follow");
  let current = null;

  function append(text, cls) {
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    if (cls) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      pre.appendChild(span);
    } else {
      pre.appendChild(document.createTextNode(text));
    }
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }

  function decode(b64) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new TextDecoder().decode(bytes);
  }

  async function showLog(opts) {
    if (current) current.abort();
    const ctl = new AbortController();
    current = ctl;
    pre.textContent = "";
    const q = new URLSearchParams();
    if (opts.attempt) {
      q.set("task", opts.task);
      q.set("attempt", opts.attempt);
      title.textContent = "Attempt " + opts.attempt + (opts.task !== "0" ? " of task " + opts.task : "");
    } else {
      title.textContent = "The newest attempt";
    }
    // An attempt that has ended is shown whole; following it would go on
    // into the attempts after it.
    if (follow.checked && (!opts.attempt || opts.running)) q.set("follow", "true");
    let resp;
    try {
      resp = await fetch("/jobs/" + pre.dataset.job + "/logs?" + q.toString(), { credentials: "same-origin", signal: ctl.signal });
    } catch (e) {
      return;
    }
    if (!resp.ok) {
      let msg = resp.statusText;
      try { msg = (await resp.json()).error.message; } catch (e) { /* not JSON */ }
      append("sortie: " + msg + "\n", "end");
      return;
    }
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (e) {
        return; // aborted: another log was asked for
      }
      if (chunk.done) break;
      buf += dec.decode(chunk.value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const ev = JSON.parse(line);
        if (ev.text) append(ev.text);
        else if (ev.bytes) append(decode(ev.bytes));
        else if (ev.attempt) append("== attempt " + ev.attempt.attempt + " of task " + ev.attempt.task + " (" + ev.attempt.cluster + ")\n", "banner");
        else if (ev.end) {
          if (ev.end.error) append("sortie: " + ev.end.error.message + "\n", "end");
          else if (follow.checked) append("== end of the log\n", "banner");
        }
      }
    }
  }

  document.addEventListener("click", function (e) {
    const b = e.target.closest("[data-log-job]");
    if (!b) return;
    showLog({ task: b.dataset.logTask || "0", attempt: b.dataset.logAttempt || "", running: b.dataset.logRunning === "true" });
    pre.scrollIntoView({ block: "nearest" });
  });
  follow.addEventListener("change", function () {
    showLog({ task: "0", attempt: "" });
  });
  showLog({ task: "0", attempt: "" });
})();
