// The run page's script (and the run shown in the editor): follows a run while it goes,
// with its elapsed time, status and title, then puts the result in place and moves the
// focus to it; asks before a secondary next step; sends each form once. It uses tr() and
// localTimes() from app.js, which the page loads first. Every part works without it:
// the page then says to refresh, and the server asks before a secondary step.
"use strict";

(() => {
  const terminal = (s) => !(s === "queued" || s === "running");

  // The run page's title is "<status> – <tool> · skrip"; the editor keeps its own.
  function setTitle(status) {
    const h1 = document.querySelector("h1[data-run-title]");
    if (h1) document.title = tr("run.status." + status) + " – " + h1.dataset.runTitle + " · skrip";
  }

  // elapsed keeps "Har kört i 12 s" ticking, counted from what the server wrote when it
  // made the page (so the browser's clock does not matter).
  function elapsed(el) {
    let queued = el.dataset.queued === "1";
    const first = parseInt((el.textContent.match(/\d+/) || ["0"])[0], 10);
    let since = Date.now() - first * 1000;
    const show = () => {
      const s = Math.max(0, Math.floor((Date.now() - since) / 1000));
      if (queued) el.textContent = tr("run.waited", { s });
      else if (s < 60) el.textContent = tr("run.elapsed", { s });
      else el.textContent = tr("run.elapsed_min", { m: Math.floor(s / 60), s: s % 60 });
    };
    const timer = setInterval(show, 1000);
    return {
      running() { if (queued) { queued = false; since = Date.now(); show(); } },
      stop() { clearInterval(timer); },
    };
  }

  // showResult loads the page again in the background and puts the finished run's
  // result where the progress was, then says so and moves the focus there. The editor,
  // whose other panes change with the run too, is loaded again whole.
  async function showResult(result, status) {
    const announce = result.parentElement.querySelector("[data-announce]");
    // While the author has unsaved code in the editor, only the result is put in place,
    // as on the run page: a reload would ask to leave, and lose the code when accepted.
    const typing = window.skripEditor && window.skripEditor.dirty();
    if (!document.querySelector("h1[data-run-title]") && !typing) { window.location.reload(); return; }
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const res = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
        const doc = new DOMParser().parseFromString(await res.text(), "text/html");
        const fresh = doc.querySelector('[data-result][data-run="' + result.dataset.run + '"]');
        if (res.ok && fresh && terminal(fresh.dataset.status)) {
          const node = document.importNode(fresh, true);
          result.replaceWith(node);
          localTimes(node);
          setupResult(node);
          setTitle(node.dataset.status);
          if (announce) announce.textContent = tr("run.ended", { status: tr("run.status." + node.dataset.status) });
          // The result's heading: reading goes on from there, and the first next-step
          // field is a few Tabs away.
          (node.querySelector("[data-result-heading]") || node).focus();
          return;
        }
      } catch (e) { /* try again */ }
      await new Promise((r) => setTimeout(r, 1000));
    }
    window.location.reload();
  }

  // follow shows a going run's status, elapsed time and output lines as they come.
  function follow(section) {
    const result = section.closest("[data-result]");
    const log = section.querySelector("[data-log]");
    const label = result.querySelector("[data-status-label]");
    const clock = elapsed(section.querySelector("[data-elapsed]"));
    const es = new EventSource(section.dataset.live);
    let over = false;
    es.addEventListener("status", (e) => {
      const s = JSON.parse(e.data);
      if (label) label.textContent = tr("run.status." + s);
      setTitle(s);
      if (s === "running") clock.running();
      if (terminal(s) && !over) {
        over = true;
        es.close();
        clock.stop();
        showResult(result, s);
      }
    });
    // What the tool prints as it goes; its error output (a traceback) only for those who
    // see its logs, as on the finished page.
    const kinds = section.hasAttribute("data-stderr-live") ? ["stdout", "stderr"] : ["stdout"];
    for (const kind of kinds) {
      es.addEventListener(kind, (e) => { log.textContent += JSON.parse(e.data) + "\n"; });
    }
    // skrip's own word about the output: lines left out of the live view, a line cut.
    es.addEventListener("notice", (e) => { log.textContent += "[skrip: " + JSON.parse(e.data) + "]\n"; });
    es.onerror = () => {
      if (over) return;
      es.close();
      clock.stop();
      setTimeout(() => window.location.reload(), 2000);
    };
  }

  // once lets a form be sent once: a double click sends one step.
  function once(form, working) {
    const button = form.querySelector("button[type=submit]");
    form.addEventListener("submit", (ev) => {
      if (ev.defaultPrevented) return;
      if (button.disabled) { ev.preventDefault(); return; }
      setTimeout(() => { button.disabled = true; if (working) button.textContent = tr("run.working"); }, 0);
    });
  }

  // A secondary next step asks first; the server asks again if the answer is missing.
  function confirmFirst(form) {
    const flag = form.querySelector("[data-confirmed]");
    form.addEventListener("submit", (ev) => {
      if (!flag || flag.value === "1") return;
      ev.preventDefault();
      if (window.confirm(form.dataset.confirm)) {
        flag.value = "1";
        // Not from inside this submit event: a form ignores submits while it fires one.
        setTimeout(() => form.requestSubmit(), 0);
      }
    });
  }

  // Avbryt asks first: a run stopped by a slip of the hand is lost work.
  function askFirst(form) {
    form.addEventListener("submit", (ev) => {
      if (!window.confirm(form.dataset.confirm)) ev.preventDefault();
    });
  }

  function setupResult(root) {
    root.querySelectorAll("form[data-action][data-confirm]").forEach(confirmFirst);
    root.querySelectorAll("form[data-cancel][data-confirm]").forEach(askFirst);
    root.querySelectorAll("form[data-action]").forEach((f) => once(f, true));
    root.querySelectorAll("form[data-action], form[data-retry]").forEach((f) => f.addEventListener("submit", (ev) => {
      if (ev.defaultPrevented) return;
      try { sessionStorage.setItem("skrip.focusResult", "1"); } catch (e) { /* the live result still takes it */ }
    }));
    root.querySelectorAll("form[data-retry], form[data-cancel], form[data-confirm-step]").forEach((f) => once(f, false));
    root.querySelectorAll("[data-live]").forEach(follow);
  }

  // Right after a run was started or a step taken, a result that is already there gets
  // the focus, as one that arrives live does (showResult).
  function focusNewResult() {
    let asked = false;
    try { asked = sessionStorage.getItem("skrip.focusResult") === "1"; sessionStorage.removeItem("skrip.focusResult"); } catch (e) { /* no storage */ }
    const heading = document.querySelector("[data-result] [data-result-heading]");
    if (asked && heading) heading.focus();
  }

  const start = () => {
    document.querySelectorAll("[data-result]").forEach(setupResult);
    focusNewResult();
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
