// The editor's checks as you type (templates/editor.html, after editor.js): the code is
// linted on a pause in typing (POST /api/v1/editor/lint, pyflakes in a sandbox) and its
// findings marked in the gutter and under the code, with CodeMirror 5's lint addon; the
// helper modules' functions and the runtime's modules are completed with the show-hint
// addon (GET /api/v1/editor/hints); hovering a helper function (or putting the cursor
// on it) shows its help from the author's guide. Without CodeMirror nothing happens:
// the plain text box and the syntax check on save remain.
"use strict";

(() => {
  const wrapper = document.querySelector("form[data-editor-form] .CodeMirror");
  const cm = wrapper && wrapper.CodeMirror;
  const CM = window.CodeMirror;
  if (!cm || !CM || !CM.showHint || !CM.defineOption) return;
  const form = wrapper.closest("form");
  const csrf = (form.querySelector("input[name=csrf]") || {}).value || "";

  // A line under the code says what the check found (for screen readers too), and what
  // the function at the cursor does.
  const status = document.createElement("p");
  status.className = "hint lint-status";
  status.setAttribute("role", "status");
  status.dataset.lintStatus = "";
  const help = document.createElement("p");
  help.className = "hint lint-help";
  help.setAttribute("aria-live", "polite");
  help.dataset.cursorHelp = "";
  help.hidden = true;
  wrapper.after(status, help);

  // Lint: one request at a time; a newer text aborts the one in flight, and the addon
  // drops an answer for a text that has changed since.
  let inFlight = null;
  let stopped = false;
  const lint = (text, done) => {
    if (stopped) return done([]);
    if (inFlight) inFlight.abort();
    const ctl = new AbortController();
    inFlight = ctl;
    status.textContent = tr("lint.checking");
    fetch("/api/v1/editor/lint", {
      method: "POST", signal: ctl.signal, credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ source: text }),
    }).then(async (res) => {
      const body = await res.json().catch(() => ({}));
      if (inFlight === ctl) inFlight = null;
      if (!res.ok) {
        const reason = body && body.error && body.error.details && body.error.details.reason;
        if (reason === "lint_unavailable") { stopped = true; status.textContent = tr("lint.unavailable"); }
        else status.textContent = tr("lint.failed");
        return done([]);
      }
      const found = (body.diagnostics || []).map((d) => annotation(d));
      const errors = found.filter((a) => a.severity === "error").length;
      status.textContent = found.length ? tr("lint.found", { errors, warnings: found.length - errors }) : tr("lint.clean");
      status.dataset.lintCount = String(found.length);
      done(found);
    }).catch((err) => {
      if (err && err.name === "AbortError") return;
      if (inFlight === ctl) inFlight = null;
      status.textContent = tr("lint.failed");
      done([]);
    });
  };
  // annotation marks the word the diagnostic points at (the whole line when it names no
  // column), as the lint addon takes it.
  const annotation = (d) => {
    const line = Math.max(0, Math.min(cm.lastLine(), (d.line || 1) - 1));
    const text = cm.getLine(line) || "";
    let from = CM.Pos(line, 0), to = CM.Pos(line, text.length);
    if (d.column > 0) {
      const ch = Math.min(text.length, d.column - 1);
      const word = cm.findWordAt(CM.Pos(line, ch));
      from = CM.Pos(line, ch);
      to = word.head.ch > ch ? word.head : CM.Pos(line, Math.min(text.length, ch + 1));
    }
    const severity = d.severity === "warning" ? "warning" : "error";
    return { from, to, severity, message: tr("lint." + severity) + ": " + d.message };
  };
  cm.setOption("gutters", [...cm.getOption("gutters").filter((g) => g !== "CodeMirror-lint-markers"), "CodeMirror-lint-markers"]);
  cm.setOption("lint", { getAnnotations: lint, async: true, delay: 700 });

  // Hints: the helper modules' functions (by module) and the runtime's modules.
  let modules = [];
  const fns = new Map(); // module → [{name, signature, help}]
  fetch("/api/v1/editor/hints", { credentials: "same-origin" })
    .then((res) => (res.ok ? res.json() : null))
    .then((h) => {
      if (!h) return;
      modules = h.modules || [];
      for (const f of h.functions || []) {
        if (!fns.has(f.module)) fns.set(f.module, []);
        fns.get(f.module).push(f);
      }
      wrapper.dataset.hints = "loaded";
    })
    .catch(() => {});

  // What the source imports: alias → module (import m, import m as a), and name →
  // function (from m import f, from m import f as g), for the helper modules.
  const imports = () => {
    const aliases = new Map(), names = new Map();
    for (const line of cm.getValue().split("\n")) {
      let m = /^\s*import\s+(.+)$/.exec(line);
      if (m) {
        for (const part of m[1].split(",")) {
          const p = /^\s*([\w.]+)(?:\s+as\s+(\w+))?\s*$/.exec(part);
          if (p) aliases.set(p[2] || p[1], p[1]);
        }
        continue;
      }
      m = /^\s*from\s+(\w+)\s+import\s+\(?([^)#]+)/.exec(line);
      if (m && fns.has(m[1])) {
        for (const part of m[2].split(",")) {
          const p = /^\s*(\w+)(?:\s+as\s+(\w+))?\s*$/.exec(part);
          const f = p && fns.get(m[1]).find((x) => x.name === p[1]);
          if (f) names.set(p[2] || p[1], f);
        }
      }
    }
    return { aliases, names };
  };

  const item = (f) => ({ text: f.name, displayText: f.signature + " · " + f.module, fn: f });
  const hint = (ed) => {
    const cur = ed.getCursor();
    const before = ed.getLine(cur.line).slice(0, cur.ch);
    const word = /(\w*)$/.exec(before)[1];
    const from = CM.Pos(cur.line, cur.ch - word.length);
    let list = [];
    let m;
    if ((m = /^\s*(?:import|from)\s+(\w*)$/.exec(before)) || (m = /^\s*import\s+.*,\s*(\w*)$/.exec(before))) {
      list = modules.filter((n) => n.startsWith(m[1])).map((n) => ({ text: n, displayText: n }));
    } else if ((m = /^\s*from\s+(\w+)\s+import\s+(?:.*,\s*)?\(?\s*(\w*)$/.exec(before))) {
      list = (fns.get(m[1]) || []).filter((f) => f.name.startsWith(m[2])).map(item);
    } else if ((m = /([A-Za-z_][\w.]*)\.(\w*)$/.exec(before))) {
      const module = imports().aliases.get(m[1]) || m[1];
      list = (fns.get(module) || []).filter((f) => f.name.startsWith(m[2])).map(item);
    } else if (word) {
      const { aliases, names } = imports();
      list = [...names.entries()].filter(([n]) => n.startsWith(word)).map(([n, f]) => ({ text: n, displayText: f.signature + " · " + f.module, fn: f }))
        .concat([...aliases.keys()].filter((n) => n.startsWith(word) && n !== word).map((n) => ({ text: n, displayText: n })));
    }
    if (!list.length) return null;
    const result = { list, from, to: cur };
    CM.on(result, "select", (c) => { if (c.fn) showHelp(c.fn); });
    CM.on(result, "close", () => { help.hidden = !help.textContent; });
    return result;
  };
  cm.setOption("hintOptions", { hint, completeSingle: false });
  cm.addKeyMap({ "Ctrl-Space": (ed) => ed.showHint() });
  cm.on("inputRead", (ed, change) => {
    if (change.origin !== "+input" || ed.state.completionActive) return;
    const typed = change.text.join("");
    const before = ed.getLine(ed.getCursor().line).slice(0, ed.getCursor().ch);
    if (typed === "." || (/^\w$/.test(typed) && /^\s*(?:import|from)\s+\w*$|^\s*from\s+\w+\s+import\s+/.test(before))) {
      ed.showHint();
    }
  });

  // Hover help: the helper function under the mouse, by the module it is reached
  // through (tk.inputs, skriptoteket_toolkit.read_inputs) or the name it was imported as.
  const fnAt = (pos) => {
    const text = cm.getLine(pos.line) || "";
    const w = cm.findWordAt(pos);
    if (w.anchor.line !== pos.line) return null;
    const name = text.slice(w.anchor.ch, w.head.ch);
    if (!/^\w+$/.test(name)) return null;
    const { aliases, names } = imports();
    const dot = /([A-Za-z_][\w.]*)\.$/.exec(text.slice(0, w.anchor.ch));
    if (dot) {
      const module = aliases.get(dot[1]) || dot[1];
      return (fns.get(module) || []).find((f) => f.name === name) || null;
    }
    return names.get(name) || null;
  };
  const tip = document.createElement("div");
  tip.className = "hover-help";
  tip.setAttribute("role", "tooltip");
  tip.id = "hover-help";
  tip.hidden = true;
  document.body.append(tip);
  const fill = (el, f) => {
    el.replaceChildren();
    const sig = document.createElement("code");
    sig.textContent = f.module + "." + f.signature;
    el.append(sig, document.createTextNode(" — " + f.help));
  };
  function showHelp(f) {
    fill(help, f);
    help.hidden = false;
  }
  let shown = null;
  CM.on(wrapper, "mousemove", (e) => {
    const pos = cm.coordsChar({ left: e.clientX, top: e.clientY }, "window");
    const box = cm.charCoords(pos, "window");
    const f = fns.size && Math.abs(box.left - e.clientX) < 40 && e.clientY >= box.top - 2 && e.clientY <= box.bottom + 2 ? fnAt(pos) : null;
    if (!f) { tip.hidden = true; shown = null; return; }
    if (shown !== f) { fill(tip, f); shown = f; }
    tip.hidden = false;
    tip.style.left = Math.min(e.clientX + window.scrollX + 12, window.scrollX + document.documentElement.clientWidth - 340) + "px";
    tip.style.top = (box.bottom + window.scrollY + 6) + "px";
  });
  CM.on(wrapper, "mouseleave", () => { tip.hidden = true; shown = null; });
  cm.on("keydown", () => { tip.hidden = true; shown = null; });
  // The cursor on a helper function: its help under the code, for the keyboard.
  cm.on("cursorActivity", () => {
    if (!fns.size) return;
    const f = fnAt(cm.getCursor());
    if (f) showHelp(f);
    else if (!cm.state.completionActive) help.hidden = true;
  });
})();
