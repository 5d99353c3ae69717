// The editor's code box and its guards against lost work (templates/editor.html).
// CodeMirror 5 comes from the server's libjs-codemirror when it is installed; without
// it the plain text box gets Tab handling. Either way the textarea stays the form's
// field. "Run in the sandbox" first saves changed code as a new version and runs that,
// and leaving the page with unsaved changes asks first.
"use strict";

(() => {
  const form = document.querySelector("form[data-editor-form]");
  if (!form) return;
  const source = document.getElementById("source");
  const runForm = document.querySelector("form[data-upload][action^='/editor/versions/']");
  let cm = null;

  // Tab indents; Shift-Tab leaves the box backwards, and Esc then Tab leaves it
  // forwards, so a keyboard user is never caught in it. CodeMirror would take Tab
  // itself, so leaving moves the focus to the next (or previous) control on the page.
  let escaped = false;
  const leave = (from, back) => {
    const all = [...document.querySelectorAll("a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex='-1'])")]
      .filter((el) => el === from || (el.offsetParent !== null && !el.closest(".CodeMirror")));
    const at = all.indexOf(from);
    const next = all[at + (back ? -1 : 1)];
    if (next) next.focus(); else from.blur();
  };
  if (window.CodeMirror) {
    cm = window.CodeMirror.fromTextArea(source, {
      mode: "python", lineNumbers: true, indentUnit: 4, tabSize: 4, indentWithTabs: false,
      smartIndent: true, lineWrapping: false, matchBrackets: true, viewportMargin: 20,
      extraKeys: {
        Tab: (ed) => {
          if (escaped) { escaped = false; leave(ed.getInputField(), false); return; }
          if (ed.somethingSelected()) ed.indentSelection("add");
          else ed.replaceSelection(" ".repeat(ed.getOption("indentUnit") - (ed.getCursor().ch % ed.getOption("indentUnit"))), "end");
        },
        "Shift-Tab": (ed) => { escaped = false; leave(ed.getInputField(), true); },
        Esc: () => { escaped = true; },
      },
    });
    cm.on("keydown", (ed, e) => { if (e.key !== "Escape" && e.key !== "Tab") escaped = false; });
    // The box CodeMirror types into keeps the label and hints of the textarea.
    const input = cm.getInputField();
    const label = document.querySelector("label[for=source]");
    if (label) { label.id = label.id || "source-label"; input.setAttribute("aria-labelledby", label.id); }
    input.setAttribute("aria-describedby", source.getAttribute("aria-describedby") || "");
    input.setAttribute("aria-multiline", "true");
    label && label.addEventListener("click", () => cm.focus());
    cm.getWrapperElement().dataset.codeEditor = "codemirror";
  } else {
    source.dataset.codeEditor = "textarea";
    source.addEventListener("keydown", (e) => {
      if (e.key === "Escape") { escaped = true; return; }
      if (e.key !== "Tab" || e.shiftKey || e.ctrlKey || e.altKey || e.metaKey) { escaped = false; return; }
      if (escaped) { escaped = false; return; }
      e.preventDefault();
      const start = source.selectionStart, end = source.selectionEnd;
      const lineStart = source.value.lastIndexOf("\n", start - 1) + 1;
      const pad = " ".repeat(4 - ((start - lineStart) % 4));
      source.setRangeText(pad, start, end, "end");
      source.dispatchEvent(new Event("input", { bubbles: true }));
    });
  }

  // The line the server's syntax check names: marked, and the box scrolled to it.
  const line = +source.dataset.syntaxLine;
  if (line > 0) {
    if (cm) {
      cm.addLineClass(line - 1, "background", "syntax-error-line");
      cm.addLineClass(line - 1, "gutter", "syntax-error-gutter");
      cm.setCursor({ line: line - 1, ch: 0 });
      cm.scrollIntoView({ line: line - 1, ch: 0 }, 80);
    } else {
      const lines = source.value.split("\n");
      const at = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
      source.setSelectionRange(at, at + (lines[line - 1] || "").length);
    }
  }

  // What was saved: the page warns before leaving when the boxes differ from it.
  const boxes = () => [cm ? cm.getValue() : source.value, ...[...form.querySelectorAll("textarea[data-json]")].map((b) => b.value)];
  let saved = boxes().join("\u0000");
  const dirty = () => boxes().join("\u0000") !== saved;
  let leaving = false;
  window.addEventListener("beforeunload", (e) => {
    if (leaving || !dirty()) return;
    e.preventDefault();
    e.returnValue = tr("editor.unsaved");
  });
  // editor-save.js saves the code before the page's other forms leave it, and then
  // leaves without asking.
  window.skripEditor = { cm, dirty, leave: () => { leaving = true; }, saved: () => { saved = boxes().join("\u0000"); } };
  form.addEventListener("submit", (e) => {
    leaving = true;
    // The schema check (app.js) may stop the submit; the guard holds again then.
    setTimeout(() => { if (e.defaultPrevented) leaving = false; }, 0);
  });

  if (!runForm) return;
  // Running changed code: save it as a new version first (the same form post as the
  // save button), then run that version. Capturing on the document runs this before the
  // run form's own upload script, which then sends the run to the new version.
  const status = document.createElement("p");
  status.setAttribute("role", "status");
  status.className = "hint";
  status.hidden = true;
  runForm.append(status);
  let saving = false;
  document.addEventListener("submit", async (e) => {
    if (e.target !== runForm || !dirty()) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (saving) return;
    saving = true;
    if (cm) cm.save();
    status.hidden = false;
    status.textContent = tr("editor.saving");
    try {
      const res = await fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin" });
      const version = res.ok && new URL(res.url).searchParams.get("version");
      if (!version) throw new Error("refused");
      saved = boxes().join("\u0000");
      form.querySelector("input[name=version]").value = version;
      runForm.action = "/editor/versions/" + encodeURIComponent(version) + "/runs";
      status.hidden = true;
      saving = false;
      runForm.requestSubmit();
    } catch (err) {
      // The server refused the code (or could not be reached): send the save form as
      // it is, so its answer shows the problem beside the code, which it keeps.
      leaving = true;
      form.submit();
    }
  }, true);
})();
