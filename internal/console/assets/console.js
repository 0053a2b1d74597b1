// The console's progressive enhancement: every page works without it.
// It refreshes the live parts of a page (data-poll), shows times in the
// viewer's time zone with the exact time on hover, reveals and copies the
// proxy URL without a reload, and asks before a form that needs it leaves
// the page (data-confirm). No inline script: the page's CSP forbids it.
"use strict";

(function () {
  const fast = 2000, slow = 15000;

  function localize(root) {
    const short = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    const exact = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      const d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) return;
      if (t.hasAttribute("data-age")) {
        // An age stays an age; its exact time is the viewer's.
        t.title = "created " + exact.format(d);
        return;
      }
      t.textContent = short.format(d);
      t.title = exact.format(d);
    });
  }

  // poll refreshes el from its data-poll URL: often while something in it
  // is on its way (data-unsettled), seldom once all is settled, never
  // while the tab is hidden.
  function poll(el) {
    let timer = null;
    function schedule() {
      clearTimeout(timer);
      timer = setTimeout(tick, el.querySelector("[data-unsettled]") ? fast : slow);
    }
    async function tick() {
      if (document.hidden) { schedule(); return; }
      try {
        const r = await fetch(el.dataset.poll, { headers: { Accept: "text/html" }, credentials: "same-origin" });
        const html = await r.text();
        if (r.ok || r.status === 403 || r.status === 404) {
          el.innerHTML = html;
          localize(el);
          el.dispatchEvent(new CustomEvent("console:refreshed", { bubbles: true }));
        }
        if (r.status === 404) return; // gone: nothing more to follow
      } catch (e) { /* the next tick tries again */ }
      schedule();
    }
    document.addEventListener("visibilitychange", function () { if (!document.hidden) tick(); });
    schedule();
  }

  // reveal asks for the proxy URL only when the person asks for it.
  function reveal(form) {
    form.addEventListener("submit", async function (ev) {
      ev.preventDefault();
      const r = await fetch(form.dataset.reveal, { credentials: "same-origin" });
      const text = (await r.text()).trim();
      const box = document.createElement("div");
      if (!r.ok) {
        box.className = "error";
        box.setAttribute("role", "alert");
        box.textContent = text;
        form.replaceWith(box);
        return;
      }
      box.innerHTML = '<p><output id="proxy-url" class="secret"></output></p>' +
        '<p class="row"><button type="button" id="copy-url" data-copy="proxy-url">Copy proxy URL</button> ' +
        '<button type="button" class="secondary" id="hide-url">Hide</button> <span id="copy-status" role="status"></span></p>';
      box.querySelector("output").textContent = text;
      form.replaceWith(box);
      wireCopy(box);
      box.querySelector("#hide-url").addEventListener("click", function () { box.replaceWith(form); form.querySelector("button").focus(); });
      box.querySelector("#copy-url").focus();
    });
  }

  function wireCopy(root) {
    root.querySelectorAll("[data-copy]").forEach(function (b) {
      b.addEventListener("click", async function () {
        const text = document.getElementById(b.dataset.copy).textContent;
        const status = document.getElementById("copy-status");
        try {
          await navigator.clipboard.writeText(text);
          status.textContent = "Copied.";
        } catch (e) {
          status.textContent = "Could not copy: select the URL and copy it.";
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    localize(document);
    document.querySelectorAll("[data-poll]").forEach(poll);
    document.querySelectorAll("form[data-reveal]").forEach(reveal);
    wireCopy(document);
    document.querySelectorAll("form[data-confirm]").forEach(function (f) {
      f.addEventListener("submit", function (ev) { if (!window.confirm(f.dataset.confirm)) ev.preventDefault(); });
    });
  });
})();
