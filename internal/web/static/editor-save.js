// No lost edits in the editor (templates/editor.html, part_edits.html). Every form that
// leaves the editor page saves changed code first, as "Kör i sandlådan" does (editor.js),
// and then acts on the NEW version, without the browser's "leave page?" box:
//   - a next step of the sandbox (and its confirmation): the new version's session goes on
//     from the step the page showed (session/continue with that rev), then the step runs
//     the new code;
//   - "Gå tillbaka hit": the new version's session goes on from that step;
//   - "Fortsätt från förra versionen": the new version's session goes on from the step
//     chosen;
//   - publishing and the sandbox's settings go to the new version; any other form (the
//     description, unpublish, sign-out) keeps the page on it.
// It also marks, in the code, the line where the author's sandbox run stopped with a
// traceback. Without this script the forms still work; the page then asks before leaving
// unsaved code.
"use strict";

(() => {
  const form = document.querySelector("form[data-editor-form]");
  const ed = window.skripEditor;
  if (!form || !ed) return;
  const cm = ed.cm;
  const runForm = document.querySelector("form[data-upload][action^='/editor/versions/']");

  // The traceback's line: noted just above the code box and marked in its gutter, and
  // scrolled to unless the code does not compile (editor.js goes to that line).
  const note = document.querySelector("[data-traceback-line]");
  if (note) {
    const line = +note.dataset.tracebackLine;
    const source = document.getElementById("source");
    source.before(note);
    const ids = (source.getAttribute("aria-describedby") || "") + " " + note.id;
    source.setAttribute("aria-describedby", ids.trim());
    if (cm) {
      cm.getInputField().setAttribute("aria-describedby", ids.trim());
      if (line > 0 && line <= cm.lineCount()) {
        cm.addLineClass(line - 1, "background", "traceback-line");
        cm.addLineClass(line - 1, "gutter", "traceback-gutter");
        if (!source.dataset.syntaxLine) cm.scrollIntoView({ line: line - 1, ch: 0 }, 80);
      }
    } else if (!source.dataset.syntaxLine) {
      // The plain text box: the line is selected, as editor.js does with a syntax error.
      const lines = source.value.split("\n");
      const at = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
      source.setSelectionRange(at, at + (lines[line - 1] || "").length);
    }
  }

  // A sandbox run refused because the code does not compile, in place (app.js's upload
  // sends the run form and hands over the page the server answered with): the line the
  // server names is marked, as on a page the server drew.
  if (runForm) runForm.addEventListener("skrip:refused", (e) => {
    const doc = e.detail && e.detail.doc;
    const theirs = doc && doc.getElementById("source");
    const line = theirs ? +theirs.dataset.syntaxLine : 0;
    const said = doc && doc.getElementById("source-syntax");
    const mine = document.getElementById("source-syntax");
    if (!(line > 0) || !said || !mine) return;
    mine.textContent = said.textContent.trim();
    mine.hidden = false;
    document.getElementById("source").dataset.syntaxLine = line;
    if (cm && line <= cm.lineCount()) {
      cm.addLineClass(line - 1, "background", "syntax-error-line");
      cm.addLineClass(line - 1, "gutter", "syntax-error-gutter");
      cm.setCursor({ line: line - 1, ch: 0 });
      cm.scrollIntoView({ line: line - 1, ch: 0 }, 80);
    }
  });

  const post = (url, fields) => fetch(url, { method: "POST", body: new URLSearchParams(fields), credentials: "same-origin", headers: { Accept: "text/html" } });

  // save posts the code as the save button does and returns the new version's id; it
  // throws when the server refused it.
  async function save() {
    if (cm) cm.save();
    const res = await post(form.action, new FormData(form));
    const version = res.ok && new URL(res.url).searchParams.get("version");
    if (!version) throw new Error("refused");
    ed.saved();
    form.querySelector("input[name=version]").value = version;
    return version;
  }

  // The version id and the rest of a sandbox form's address (/editor/versions/{id}/rest).
  const sandboxPath = (f) => {
    const m = new URL(f.action, location.href).pathname.match(/^\/editor\/versions\/([^/]+)\/(.+)$/);
    return m ? { version: decodeURIComponent(m[1]), rest: m[2] } : null;
  };
  const field = (f, name) => { const el = f.querySelector("[name='" + name + "']"); return el ? el.value : ""; };
  const leave = (f) => { ed.leave(); HTMLFormElement.prototype.submit.call(f); };
  const go = (url) => { ed.leave(); location.assign(url); };
  // The editor's page of version v.
  const editorURL = (v) => new URL(form.action, location.href).pathname.replace(/\/versions$/, "") + "?version=" + encodeURIComponent(v);

  // goOn lets the new version's sandbox session go on from version from at step rev
  // ("" for where it is), and returns the answer: the new version's page.
  async function goOn(f, version, from, rev) {
    const res = await post("/editor/versions/" + encodeURIComponent(version) + "/session/continue",
      { csrf: field(f, "csrf"), from, rev, expected_state_rev: "0" });
    if (!res.ok || !new URL(res.url).searchParams.has("continued")) {
      // Refused: the new version's page, which holds the code.
      go(editorURL(version));
      return null;
    }
    return res;
  }

  async function afterSave(f, version) {
    const at = sandboxPath(f);
    const base = "/editor/versions/" + encodeURIComponent(version) + "/";
    if (at && at.rest.startsWith("actions/")) {
      // A next step: the session goes on from the step the page showed, then the step
      // runs on the new version with the revision that session is at.
      const res = await goOn(f, version, at.version, field(f, "expected_state_rev"));
      if (!res) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const rev = doc.querySelector("form[action$='/" + at.rest + "'] [name=expected_state_rev], [data-state-rev]");
      f.action = base + at.rest;
      const mine = f.querySelector("[name=expected_state_rev]");
      if (mine && rev) mine.value = rev.value;
      leave(f);
    } else if (at && at.rest === "session/back") {
      const res = await goOn(f, version, at.version, field(f, "rev"));
      if (res) go(res.url.replace("continued=1", "back=1"));
    } else if (at && at.rest === "session/continue") {
      const res = await goOn(f, version, field(f, "from"), field(f, "rev"));
      if (res) go(res.url);
    } else if (at) {
      // Publishing or the sandbox's settings: of the new version. A publish confirmed for
      // the old version is asked again for the new one.
      f.action = base + at.rest;
      const confirmed = f.querySelector("[name=confirm]");
      if (confirmed) confirmed.remove();
      leave(f);
    } else {
      const v = f.querySelector("input[name=version]");
      if (v) v.value = version;
      leave(f);
    }
  }

  let saving = false;
  // In the bubbling phase, after the form's own scripts: a step that asks first (run.js)
  // has stopped its submit while it asks, and comes again once confirmed.
  document.addEventListener("submit", async (e) => {
    const f = e.target;
    if (f === form || f === runForm || e.defaultPrevented || !(f instanceof HTMLFormElement)) return;
    if ((f.getAttribute("method") || "get").toLowerCase() !== "post" || (f.target && f.target !== "_self")) return;
    if (!ed.dirty()) return;
    e.preventDefault();
    if (saving) return;
    saving = true;
    const status = document.createElement("p");
    status.setAttribute("role", "status");
    status.className = "hint";
    status.dataset.savingFirst = "";
    status.textContent = tr("editor.saving_step");
    f.append(status);
    let version;
    try {
      version = await save();
    } catch (err) {
      // The server refused the code (or could not be reached): the save form goes as it
      // is, and its answer shows the problem beside the code, which it keeps.
      ed.leave();
      HTMLFormElement.prototype.submit.call(form);
      return;
    }
    try {
      await afterSave(f, version);
    } catch (err) {
      go(editorURL(version));
    }
  });
})();
