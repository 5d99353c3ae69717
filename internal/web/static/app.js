// skrip's only script. Each part looks for the elements it serves and does nothing on
// a page without them; every page works without it, only less conveniently.
"use strict";

function formatSize(n) {
  if (n < 1000) return n === 1 ? "1 byte" : n + " bytes";
  const units = ["kB", "MB", "GB", "TB"];
  let v = n / 1000, i = 0;
  while (v >= 999.95 && i < units.length - 1) { v /= 1000; i++; }
  return v.toFixed(1).replace(/\.0$/, "") + " " + units[i];
}

function escapeKey(key) {
  return key.split("/").map(encodeURIComponent).join("/");
}

// An error from the JSON API, as the sentence it carries.
function apiMessage(xhr) {
  try { return JSON.parse(xhr.responseText).error.message; } catch (e) { return "The server answered " + xhr.status + ". Try again."; }
}

// Run forms: list the chosen files with their sizes, check the caps as a courtesy (the
// server checks them for real), and send with a progress bar. A refusal is shown next
// to the form and the chosen files stay chosen.
function setupUpload(form) {
  const input = form.querySelector("input[type=file]");
  const list = form.querySelector("[data-picked]");
  const courtesy = form.querySelector("[data-courtesy]");
  const errorBox = form.querySelector("[data-error]");
  const progress = form.querySelector("[data-progress]");
  const button = form.querySelector("button[type=submit]");
  const maxFiles = +form.dataset.maxFiles, maxFile = +form.dataset.maxFileBytes, maxTotal = +form.dataset.maxTotalBytes;

  input.addEventListener("change", () => {
    list.replaceChildren();
    const problems = [];
    let total = 0;
    for (const f of input.files) {
      total += f.size;
      const li = document.createElement("li");
      li.textContent = f.name + " · " + formatSize(f.size);
      if (f.size > maxFile) {
        li.className = "over";
        li.textContent += " (over the " + formatSize(maxFile) + " limit per file)";
        problems.push(f.name + " is larger than " + formatSize(maxFile) + ".");
      }
      list.append(li);
    }
    if (input.files.length > maxFiles) problems.push("You chose " + input.files.length + " files; the limit is " + maxFiles + ".");
    if (total > maxTotal) problems.push("Together the files are " + formatSize(total) + "; the limit is " + formatSize(maxTotal) + ".");
    courtesy.hidden = problems.length === 0;
    courtesy.textContent = problems.length ? problems.join(" ") + " The server will refuse this upload." : "";
    errorBox.hidden = true;
  });

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.responseType = "document";
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) { progress.hidden = false; progress.value = Math.round(100 * e.loaded / e.total); progress.textContent = progress.value + "%"; }
    });
    xhr.addEventListener("load", () => {
      if (xhr.status < 400) { window.location.assign(xhr.responseURL); return; }
      const doc = xhr.response;
      const theirs = doc && (doc.querySelector("[data-error]:not([hidden])") || doc.querySelector("[role=alert]"));
      errorBox.textContent = theirs ? theirs.textContent.trim() : "The server refused the upload (" + xhr.status + ").";
      errorBox.hidden = false;
      progress.hidden = true;
      button.disabled = false;
      errorBox.scrollIntoView({ block: "nearest" });
    });
    xhr.addEventListener("error", () => {
      errorBox.textContent = "The upload did not reach the server. Check your connection and try again.";
      errorBox.hidden = false;
      progress.hidden = true;
      button.disabled = false;
    });
    button.disabled = true;
    errorBox.hidden = true;
    xhr.send(new FormData(form));
  });
}

// The run page while a run is going: show its status and output lines as they come,
// then load the page again to show the results.
function setupLive(section) {
  const log = section.querySelector("[data-log]");
  const label = document.querySelector("[data-status-label]");
  const labels = { queued: "Waiting to start", running: "Running", succeeded: "Done", failed: "Failed", timed_out: "Timed out", cancelled: "Cancelled" };
  const es = new EventSource(section.dataset.live);
  es.addEventListener("status", (e) => {
    const s = JSON.parse(e.data);
    if (label) label.textContent = labels[s] || s;
    if (!(s === "queued" || s === "running")) { es.close(); window.location.reload(); }
  });
  for (const kind of ["stdout", "stderr"]) {
    es.addEventListener(kind, (e) => { log.textContent += JSON.parse(e.data) + "\n"; });
  }
  // skrip's own word about the output: lines left out of the live view, a line cut.
  es.addEventListener("notice", (e) => { log.textContent += "[skrip: " + JSON.parse(e.data) + "]\n"; });
  es.onerror = () => { es.close(); setTimeout(() => window.location.reload(), 2000); };
}

// Action forms: sendable only while the page holds the session's state_rev, and only
// once (a double click sends one step).
function setupAction(form) {
  const rev = form.querySelector("[data-state-rev]");
  const button = form.querySelector("button[type=submit]");
  button.disabled = !rev || rev.value === "";
  form.addEventListener("submit", (ev) => {
    if (button.disabled) { ev.preventDefault(); return; }
    setTimeout(() => { button.disabled = true; button.textContent = "Working…"; }, 0);
  });
}

// Staged files: upload to the files API with progress; delete with a confirmation.
function setupStage(form) {
  const progress = form.querySelector("[data-progress]");
  const errorBox = form.querySelector("[data-error]");
  const button = form.querySelector("button[type=submit]");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const file = form.querySelector("input[type=file]").files[0];
    if (!file) return;
    const key = form.querySelector("[name=key]").value.trim();
    const body = new FormData();
    if (key) body.append("key", key);
    body.append("file", file);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/v1/files");
    xhr.setRequestHeader("X-CSRF-Token", form.dataset.csrf);
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) { progress.hidden = false; progress.value = Math.round(100 * e.loaded / e.total); progress.textContent = progress.value + "%"; }
    });
    xhr.addEventListener("load", () => {
      if (xhr.status < 300) { window.location.reload(); return; }
      errorBox.textContent = apiMessage(xhr); errorBox.hidden = false; progress.hidden = true; button.disabled = false;
    });
    xhr.addEventListener("error", () => {
      errorBox.textContent = "The upload did not reach the server. Check your connection and try again.";
      errorBox.hidden = false; progress.hidden = true; button.disabled = false;
    });
    button.disabled = true; errorBox.hidden = true;
    xhr.send(body);
  });
}

function setupDelete(button) {
  button.addEventListener("click", async () => {
    const key = button.dataset.delete;
    if (!window.confirm("Delete " + key + "? This cannot be undone.")) return;
    button.disabled = true;
    const owner = button.dataset.owner ? "?owner=" + encodeURIComponent(button.dataset.owner) : "";
    const res = await fetch("/api/v1/files/" + escapeKey(key) + owner, { method: "DELETE", headers: { "X-CSRF-Token": button.dataset.csrf } });
    if (res.ok) { window.location.reload(); return; }
    let msg = "The server answered " + res.status + ".";
    try { msg = (await res.json()).error.message; } catch (e) { /* keep the status */ }
    window.alert(msg);
    button.disabled = false;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-upload]").forEach(setupUpload);
  document.querySelectorAll("[data-live]").forEach(setupLive);
  document.querySelectorAll("form[data-action]").forEach(setupAction);
  document.querySelectorAll("form[data-stage]").forEach(setupStage);
  document.querySelectorAll("[data-delete]").forEach(setupDelete);
});
