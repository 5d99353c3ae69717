// skrip's main script, on every page; the run page adds static/run.js. Each part looks
// for the elements it serves and does nothing on a page without them; every page works
// without it, only less conveniently.
"use strict";

// The page's language and its text for this script: the catalogue's "js." messages,
// which the page carries as JSON (layout.html). tr("key", {n: 3}) fills "{n}".
const UI = (() => {
  try { return JSON.parse(document.getElementById("ui-text").textContent) || {}; } catch (e) { return {}; }
})();
function tr(key, vars) {
  let s = Object.prototype.hasOwnProperty.call(UI, key) ? UI[key] : key;
  for (const k in vars || {}) s = s.split("{" + k + "}").join(String(vars[k]));
  return s;
}

// localTimes shows every <time datetime> in the browser's time zone: its title (the
// exact moment), and its text too where the server wrote the moment itself (class
// "stamp"), in UTC for want of knowing the zone.
function localTimes(root) {
  const lang = document.documentElement.lang || undefined;
  const fmt = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" });
  root.querySelectorAll("time[datetime]").forEach((el) => {
    const d = new Date(el.getAttribute("datetime"));
    if (isNaN(d)) return;
    const local = fmt.format(d);
    if (el.classList.contains("stamp")) el.textContent = local; else el.title = local;
  });
}

// formatSize writes a byte count as the server's size does, in the page's language.
function formatSize(n) {
  if (n < 1000) return n + " " + tr(n === 1 ? "upload.byte" : "upload.bytes");
  const units = ["kB", "MB", "GB", "TB"];
  let v = n / 1000, i = 0;
  while (v >= 999.95 && i < units.length - 1) { v /= 1000; i++; }
  return v.toFixed(1).replace(/\.0$/, "").replace(".", tr("upload.decimal")) + " " + units[i];
}

function escapeKey(key) {
  return key.split("/").map(encodeURIComponent).join("/");
}

// An error from the JSON API, told in the page's language: the server chooses the
// sentence from the error's reason and details (POST /refusal), never the API's English.
async function apiMessage(xhr) {
  return refusalMessage(xhr.responseText, xhr.status);
}

async function refusalMessage(text, status) {
  let answer;
  try { answer = JSON.parse(text); } catch (e) { return tr("server.answered", { status }); }
  try {
    const res = await fetch("/refusal", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ error: answer.error, status }) });
    if (res.ok) return (await res.json()).message;
  } catch (e) { /* the server is gone: say so by the status */ }
  return tr("server.answered", { status });
}

// The typed file slot of a run form (a tool with an input_schema): the number of files
// and their types, checked as a courtesy before sending. The server checks them for
// real. A run that sends no files gets the session's kept files (data-kept of them).
function slotProblem(input) {
  const min = +input.dataset.min, max = +input.dataset.max, kept = +(input.dataset.kept || 0);
  const accept = (input.dataset.accept || "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
  const n = input.files.length;
  if (n === 0 && kept >= min && kept <= max) return "";
  if (n === 0 && min >= 1) return min === 1 ? tr("upload.choose_one") : tr("upload.choose_at_least", { min });
  if (n < min) return tr("upload.too_few", { min, n });
  if (n > max) return tr(max === 1 ? "upload.too_many_one" : "upload.too_many", { max, n });
  if (accept.length) {
    // As the server reads accept: the name ends in one of the extensions, with
    // something before it.
    const wrong = [...input.files].map((f) => f.name).filter((name) => {
      const lower = name.toLowerCase();
      return !accept.some((ext) => lower.length > ext.length && lower.endsWith(ext));
    });
    if (wrong.length) {
      return tr(wrong.length === 1 ? "upload.wrong_type_one" : "upload.wrong_type_many", { names: wrong.join(", "), types: accept.join(", ") });
    }
  }
  return "";
}

// showFieldError puts msg (or nothing) in the error element box and marks the controls
// that name it in aria-describedby as invalid or valid again.
function showFieldError(form, box, msg) {
  box.textContent = msg;
  box.hidden = msg === "";
  form.querySelectorAll("[aria-describedby~='" + box.id + "']").forEach((el) => {
    if (msg) el.setAttribute("aria-invalid", "true"); else el.removeAttribute("aria-invalid");
  });
}

// firstInvalid is the first control of form marked invalid, to move the focus to.
function firstInvalid(form) {
  const el = form.querySelector("[aria-invalid=true]");
  if (el && el.tagName === "FIELDSET") return el.querySelector("input");
  return el;
}

// Run forms: list the chosen files with their sizes, check the caps and the slot's
// rules as a courtesy, and send with a progress bar. A refusal is shown beside the field
// it names, or above the button; what the user typed and chose stays.
function setupUpload(form) {
  const input = form.querySelector("input[type=file]");
  const list = form.querySelector("[data-picked]");
  const courtesy = form.querySelector("[data-courtesy]");
  const errorBox = form.querySelector("[data-error]");
  const progress = form.querySelector("[data-progress]");
  const button = form.querySelector("button[type=submit]");
  const maxFiles = +form.dataset.maxFiles, maxFile = +form.dataset.maxFileBytes, maxTotal = +form.dataset.maxTotalBytes;
  const slot = input && input.hasAttribute("data-slot") ? input : null;
  const slotError = input && document.getElementById(input.id + "-error");

  if (input) input.addEventListener("change", () => {
    list.replaceChildren();
    const problems = [];
    let total = 0;
    for (const f of input.files) {
      total += f.size;
      const li = document.createElement("li");
      li.textContent = f.name + " · " + formatSize(f.size);
      if (f.size > maxFile) {
        li.className = "over";
        li.textContent += " " + tr("upload.over_file_cap", { size: formatSize(maxFile) });
        problems.push(tr("upload.file_too_big", { name: f.name, size: formatSize(maxFile) }));
      }
      list.append(li);
    }
    if (input.files.length > maxFiles) problems.push(tr("upload.too_many_files", { n: input.files.length, max: maxFiles }));
    if (total > maxTotal) problems.push(tr("upload.total_too_big", { size: formatSize(total), max: formatSize(maxTotal) }));
    courtesy.hidden = problems.length === 0;
    courtesy.textContent = problems.length ? problems.join(" ") + " " + tr("upload.will_refuse") : "";
    if (slot) showFieldError(form, slotError, slotProblem(slot));
    else if (slotError) showFieldError(form, slotError, "");
    errorBox.hidden = true;
  });

  const fail = (msg) => {
    errorBox.textContent = msg;
    errorBox.hidden = msg === "";
    progress.hidden = true;
    button.disabled = false;
    const focus = firstInvalid(form);
    if (focus) focus.focus(); else if (msg) errorBox.scrollIntoView({ block: "nearest" });
  };

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    form.querySelectorAll("[data-field-error]").forEach((box) => showFieldError(form, box, ""));
    if (slot) {
      const problem = slotProblem(slot);
      if (problem) {
        showFieldError(form, slotError, problem);
        slot.focus();
        return;
      }
    }
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.responseType = "document";
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) { progress.hidden = false; progress.value = Math.round(100 * e.loaded / e.total); progress.textContent = progress.value + "%"; }
    });
    xhr.addEventListener("load", () => {
      if (xhr.status < 400) {
        // The run page puts the focus on the result once there is one (static/run.js).
        try { sessionStorage.setItem("skrip.focusResult", "1"); } catch (e) { /* the live result still takes it */ }
        window.location.assign(xhr.responseURL);
        return;
      }
      // The server answers a refusal with the page it would show without this script:
      // take its messages, each to the same place in this one.
      const doc = xhr.response;
      // The page's own scripts may read more of the refusal (the editor: a line that
      // does not compile, editor-save.js).
      form.dispatchEvent(new CustomEvent("skrip:refused", { detail: { doc } }));
      let placed = false;
      form.querySelectorAll("[data-field-error]").forEach((box) => {
        const theirs = doc && doc.getElementById(box.id);
        if (theirs && !theirs.hidden && theirs.textContent.trim()) {
          showFieldError(form, box, theirs.textContent.trim());
          placed = true;
        }
      });
      const general = doc && doc.querySelector("form[data-upload] [data-error]:not([hidden])");
      const page = doc && !doc.querySelector("form[data-upload]") && doc.querySelector("[role=alert]");
      if (general) fail(general.textContent.trim());
      else if (page) fail(page.textContent.trim());
      else fail(placed ? "" : tr("upload.not_taken", { status: xhr.status }));
    });
    xhr.addEventListener("error", () => fail(tr("upload.no_server")));
    button.disabled = true;
    errorBox.hidden = true;
    xhr.send(new FormData(form));
  });
}

// Schema boxes in the editor: each must be empty or JSON, checked while typing and
// before saving. The server checks the schema itself when it is saved.
function setupJSON(form) {
  const boxes = [...form.querySelectorAll("textarea[data-json]")];
  const check = (box) => {
    let msg = "";
    if (box.value.trim() !== "") {
      try { JSON.parse(box.value); } catch (e) { msg = tr("editor.bad_json", { error: e.message }); }
    }
    showFieldError(form, document.getElementById(box.id + "-error"), msg);
    return msg === "";
  };
  for (const box of boxes) {
    let timer = 0;
    box.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => check(box), 400); });
    box.addEventListener("blur", () => check(box));
  }
  form.addEventListener("submit", (ev) => {
    const bad = boxes.filter((box) => !check(box));
    if (bad.length) { ev.preventDefault(); bad[0].focus(); }
  });
}

// The run page (following a run, its next-step forms) is static/run.js.

// Staged files: upload to the files API with progress; delete with a confirmation. A
// file of TUS_MIN_BYTES or more goes resumably (static/tus.js, loaded by this page), and
// the page tells of an upload a reload left unfinished.
function setupStage(form) {
  const progress = form.querySelector("[data-progress]");
  const errorBox = form.querySelector("[data-error]");
  const status = form.querySelector("[data-upload-status]");
  const button = form.querySelector("button[type=submit]");
  const resumable = typeof tusUpload === "function";
  let file = null, started = 0;
  // How far, and how fast: "42 % · 3,1 MB/s", read out now and then, not at every step.
  const showProgress = (fraction) => {
    progress.hidden = false; progress.value = Math.round(100 * fraction); progress.textContent = progress.value + "%";
    const seconds = (Date.now() - started) / 1000;
    const speed = seconds > 0.5 ? formatSize(Math.round(fraction * file.size / seconds)) : "";
    status.textContent = speed ? tr("files.progress", { percent: progress.value, speed }) : tr("files.progress_start", { percent: progress.value });
  };
  const fail = (msg) => {
    errorBox.textContent = msg; errorBox.hidden = false; progress.hidden = true; status.textContent = ""; button.disabled = false;
  };
  // Done: the list is loaded again with the new file, and says so there.
  const done = (key) => {
    progress.value = 100; status.textContent = tr("files.done", { key: key || file.name });
    try { sessionStorage.setItem("skrip.staged", status.textContent); } catch (e) { /* private mode: the list shows it */ }
    window.location.reload();
  };
  try {
    const said = sessionStorage.getItem("skrip.staged");
    if (said) { status.textContent = said; sessionStorage.removeItem("skrip.staged"); }
  } catch (e) { /* nothing kept */ }
  if (resumable && !status.textContent) {
    const left = tusUnfinished(form.dataset.user);
    if (left.length) status.textContent = tr("files.unfinished", { name: left[0].name, size: formatSize(left[0].size) });
  }
  // The keys the list shows, for asking before a file takes the place of one of them.
  const listed = new Set(Array.from(document.querySelectorAll("[data-delete]"), (b) => b.dataset.delete));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    file = form.querySelector("input[type=file]").files[0];
    if (!file) return;
    const key = form.querySelector("[name=key]").value.trim();
    const ttlField = form.querySelector("[name=ttl]");
    const target = key || "files/" + file.name;
    if (listed.has(target) && !window.confirm(tr("files.confirm_replace", { key: target, name: file.name }))) return;
    button.disabled = true; errorBox.hidden = true; status.textContent = ""; started = Date.now();
    if (resumable && file.size >= TUS_MIN_BYTES) {
      tusUpload(file, { user: form.dataset.user, csrf: form.dataset.csrf, key: key, ttl: ttlField ? ttlField.value.trim() : "",
        progress: showProgress, status: (text) => { status.textContent = text; } })
        .then(() => done(key), (e) => fail(e.message));
      return;
    }
    const body = new FormData();
    if (key) body.append("key", key);
    if (ttlField && ttlField.value.trim()) body.append("ttl", ttlField.value.trim());
    body.append("file", file);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/v1/files");
    xhr.setRequestHeader("X-CSRF-Token", form.dataset.csrf);
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) showProgress(e.loaded / e.total);
    });
    xhr.addEventListener("load", () => {
      if (xhr.status < 300) {
        let stored = key;
        try { stored = JSON.parse(xhr.responseText).key || key; } catch (e) { /* say it by name */ }
        done(stored);
        return;
      }
      apiMessage(xhr).then(fail);
    });
    xhr.addEventListener("error", () => fail(tr("files.no_server")));
    xhr.send(body);
  });
}

function setupDelete(button) {
  button.addEventListener("click", async () => {
    const key = button.dataset.delete;
    if (!window.confirm(tr("files.confirm_delete", { key: key }))) return;
    button.disabled = true;
    const owner = button.dataset.owner ? "?owner=" + encodeURIComponent(button.dataset.owner) : "";
    const res = await fetch("/api/v1/files/" + escapeKey(key) + owner, { method: "DELETE", headers: { "X-CSRF-Token": button.dataset.csrf } });
    if (res.ok) { window.location.reload(); return; }
    window.alert(await refusalMessage(await res.text(), res.status));
    button.disabled = false;
  });
}

// Share links: make one with the files API and put its URL on the clipboard (or, where
// the browser does not allow that, selected in a box to copy by hand).
function setupShare(form) {
  const button = form.querySelector("button[type=submit]");
  const box = form.querySelector("[data-share-url]");
  const status = form.querySelector("[data-share-status]");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const owner = form.dataset.owner ? "?owner=" + encodeURIComponent(form.dataset.owner) : "";
    const body = { ttl: form.querySelector("[name=ttl]").value };
    const max = form.querySelector("[name=max_downloads]").value.trim();
    if (max) body.max_downloads = Number(max);
    button.disabled = true; status.textContent = "";
    try {
      const res = await fetch("/api/v1/files/" + escapeKey(form.dataset.share) + "/links" + owner, {
        method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": form.dataset.csrf }, body: JSON.stringify(body) });
      const text = await res.text();
      if (!res.ok) {
        status.textContent = await refusalMessage(text, res.status);
        return;
      }
      const answer = JSON.parse(text);
      const lang = document.documentElement.lang || undefined;
      const expires = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" }).format(new Date(answer.expires_at));
      box.value = answer.url; box.hidden = false;
      form.querySelector("[data-share-label]").hidden = false;
      let copied = false;
      try { await navigator.clipboard.writeText(answer.url); copied = true; } catch (e) { /* not allowed here: select it instead */ }
      if (!copied) { box.focus(); box.select(); }
      status.textContent = tr(copied ? "files.link_copied" : "files.link_select", { expires: expires });
    } catch (e) {
      status.textContent = tr("files.link_no_server");
    } finally {
      button.disabled = false;
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  document.querySelectorAll("form[data-upload]").forEach(setupUpload);
  document.querySelectorAll("form[data-schemas]").forEach(setupJSON);
  document.querySelectorAll("form[data-stage]").forEach(setupStage);
  document.querySelectorAll("[data-delete]").forEach(setupDelete);
  document.querySelectorAll("form[data-share]").forEach(setupShare);
});
