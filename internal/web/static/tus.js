// The Files page's resumable uploads: a small client of the tus 1.0 protocol that the
// server speaks at /api/v1/uploads/ (docs/api.md). A large file is created there, then
// sent from the server's offset, so a dropped connection or a restarted server costs
// only the bytes in flight, and a reload of the page goes on where it stopped (the
// upload's URL is kept in localStorage). app.js calls tusUpload for files of
// TUS_MIN_BYTES or more; smaller ones keep the one-request upload, which needs two
// round trips fewer. Written by hand because the page has no build step.
"use strict";

const TUS_MIN_BYTES = 8 * 1024 * 1024;
// After a lost connection or a 5xx the client waits 1 s, 2 s, 4 s … (at most
// TUS_WAIT_MAX_MS) between tries, and gives up when TUS_RETRY_FOR_MS pass with no answer
// that moved the upload on.
const TUS_WAIT_MAX_MS = 16000, TUS_RETRY_FOR_MS = 2 * 60 * 1000;
// A PATCH that sends nothing for this long, or another request that gets no answer, is
// a lost connection: the network may drop a connection without telling the browser.
const TUS_STALL_MS = 30000;
const TUS_KEPT_PREFIX = "skrip.upload:";

// tusLost is a request that got no answer; every other failure is an answer to show.
class tusLost extends Error {}

// tusRequest sends one request of the protocol and resolves with the answer, whatever
// its status; it rejects with tusLost when none came. sent(n) hears how many bytes of
// body have gone.
function tusRequest(method, url, csrf, headers, body, sent) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.setRequestHeader("Tus-Resumable", "1.0.0");
    xhr.setRequestHeader("X-CSRF-Token", csrf);
    for (const k in headers) xhr.setRequestHeader(k, headers[k]);
    let stall = 0;
    if (body) {
      // Sending a large body takes as long as it takes: only a pause is a loss. Once
      // the body has gone, the server checks the whole file before it answers the
      // last PATCH, which also takes its time.
      const watch = () => { clearTimeout(stall); stall = setTimeout(() => xhr.abort(), TUS_STALL_MS); };
      xhr.upload.addEventListener("progress", (e) => { watch(); if (sent) sent(e.loaded); });
      xhr.upload.addEventListener("load", () => clearTimeout(stall));
      watch();
    } else {
      xhr.timeout = TUS_STALL_MS;
    }
    const lost = () => { clearTimeout(stall); reject(new tusLost(method + " " + url)); };
    xhr.addEventListener("load", () => { clearTimeout(stall); resolve(xhr); });
    xhr.addEventListener("error", lost);
    xhr.addEventListener("abort", lost);
    xhr.addEventListener("timeout", lost);
    xhr.send(body || null);
  });
}

// tusMetadata is the Upload-Metadata header: each value base64 of its UTF-8.
function tusMetadata(meta) {
  const parts = [];
  for (const k in meta) {
    if (!meta[k]) continue;
    let bin = "";
    for (const b of new TextEncoder().encode(meta[k])) bin += String.fromCharCode(b);
    parts.push(k + " " + btoa(bin));
  }
  return parts.join(",");
}

// The uploads this browser has begun and not finished, in localStorage under
// TUS_KEPT_PREFIX + the user, the file's name, size and time, and the key asked for:
// choosing the same file again finds its upload. An entry holds the upload's URL and
// when the server lets it expire.
function tusKeptKey(user, file, key) {
  return TUS_KEPT_PREFIX + JSON.stringify([user, file.name, file.size, file.lastModified, key || ""]);
}

function tusKept(id) {
  try {
    const v = JSON.parse(localStorage.getItem(id) || "null");
    return v && typeof v.url === "string" ? v : null;
  } catch (e) { return null; }
}

function tusKeep(id, v) {
  try { localStorage.setItem(id, JSON.stringify(v)); } catch (e) { /* private mode or full: no resuming after a reload */ }
}

function tusForget(id) {
  try { localStorage.removeItem(id); } catch (e) { /* nothing kept */ }
}

// tusExpires is when the server lets the upload expire, by its answer xhr (0: not said).
function tusExpires(xhr) {
  const t = Date.parse(xhr.getResponseHeader("Upload-Expires") || "");
  return isNaN(t) ? 0 : t;
}

// tusUnfinished lists this user's unfinished uploads ({name, size}), forgetting those
// the server has let expire.
function tusUnfinished(user) {
  const out = [];
  let ids = [];
  try { ids = Object.keys(localStorage).filter((id) => id.startsWith(TUS_KEPT_PREFIX)); } catch (e) { return out; }
  for (const id of ids) {
    let who;
    try { who = JSON.parse(id.slice(TUS_KEPT_PREFIX.length))[0]; } catch (e) { who = null; }
    const v = tusKept(id);
    if (!v || (v.expires && v.expires < Date.now())) { tusForget(id); continue; }
    if (who === user) out.push(v);
  }
  return out;
}

// tusBackoff paces the tries after a loss: wait() sleeps 1 s, 2 s, 4 s … and throws the
// message to show once tries have gone on for TUS_RETRY_FOR_MS; moved() starts over
// after an answer that moved the upload on.
function tusBackoff(status) {
  let delay = 0, since = 0;
  return {
    moved() { delay = 0; since = 0; },
    async wait() {
      const now = Date.now();
      if (!since) since = now;
      if (now - since >= TUS_RETRY_FOR_MS) throw new Error(tr("files.gave_up"));
      delay = delay ? Math.min(2 * delay, TUS_WAIT_MAX_MS) : 1000;
      status(tr("files.retrying", { s: Math.round(delay / 1000) }));
      await new Promise((r) => setTimeout(r, delay));
    },
  };
}

// tusUpload sends file resumably and resolves with the staged file's FileInfo, or
// rejects with an Error whose message is for the user. opts: user and csrf (the page's),
// key and ttl (from the form, or empty), progress(fraction) and status(text).
async function tusUpload(file, opts) {
  const id = tusKeptKey(opts.user, file, opts.key);
  const retry = tusBackoff(opts.status);
  const kept = tusKept(id);
  let url = kept ? kept.url : "";
  let offset = -1; // not known: HEAD asks the server
  let confirmed = -1; // the most bytes the server has said it holds
  let created = false, done = false;
  for (;;) {
    let xhr;
    try {
      if (done) {
        xhr = await tusRequest("GET", url, opts.csrf, {});
        if (xhr.status === 200) return JSON.parse(xhr.responseText).file;
      } else if (!url) {
        xhr = await tusRequest("POST", "/api/v1/uploads/", opts.csrf, {
          "Upload-Length": String(file.size),
          "Upload-Metadata": tusMetadata({ key: opts.key, filename: file.name, content_type: file.type, ttl: opts.ttl }),
        });
        if (xhr.status === 201) {
          url = new URL(xhr.getResponseHeader("Location"), window.location.href).href;
          tusKeep(id, { url, name: file.name, size: file.size, expires: tusExpires(xhr) });
          offset = confirmed = +(xhr.getResponseHeader("Upload-Offset") || 0);
          created = true;
          retry.moved();
          continue;
        }
      } else if (offset < 0) {
        xhr = await tusRequest("HEAD", url, opts.csrf, {});
        if (xhr.status === 200) {
          offset = +xhr.getResponseHeader("Upload-Offset");
          // Each PATCH put the expiry off; keep the entry as long as the server keeps the upload.
          tusKeep(id, { url, name: file.name, size: file.size, expires: tusExpires(xhr) });
          opts.progress(offset / file.size);
          if (offset > 0) opts.status(tr("files.resuming", { done: formatSize(offset), size: formatSize(file.size) }));
          // Only bytes gained count as an answer that moved the upload on: a server
          // that answers HEAD but refuses every PATCH is given up on in time.
          if (offset > confirmed) retry.moved();
          confirmed = Math.max(confirmed, offset);
          continue;
        }
        if (xhr.status === 404 || xhr.status === 410) {
          // Expired, removed, or begun by someone else in this browser: the upload this
          // page kept is gone. Begin a new one, unless it is the one just made.
          tusForget(id);
          if (created) throw new Error(tr("files.upload_gone"));
          url = "";
          continue;
        }
      } else if (offset < file.size) {
        const from = offset;
        xhr = await tusRequest("PATCH", url, opts.csrf, {
          "Upload-Offset": String(from),
          "Content-Type": "application/offset+octet-stream",
        }, file.slice(from), (n) => opts.progress((from + n) / file.size));
        if (xhr.status === 204) {
          offset = +xhr.getResponseHeader("Upload-Offset");
          confirmed = Math.max(confirmed, offset);
          retry.moved();
          if (offset >= file.size) { tusForget(id); done = true; }
          continue;
        }
        if (xhr.status === 404 || xhr.status === 410) {
          tusForget(id);
          throw new Error(tr("files.upload_gone"));
        }
        if (xhr.status === 409) {
          // The server holds other bytes than this page thought (a PATCH it took in
          // part): ask it where to go on from.
          offset = -1;
          await retry.wait();
          continue;
        }
      } else {
        done = true; // a HEAD found every byte there: the last PATCH's answer was lost
        tusForget(id);
        continue;
      }
    } catch (e) {
      if (!(e instanceof tusLost)) throw e;
      await retry.wait();
      if (!done) offset = -1;
      continue;
    }
    // A server that is failing, restarting or still finishing the request cut off
    // (423: the upload is locked by it) is waited for, then asked for the offset.
    if (xhr.status >= 500 || xhr.status === 423 || xhr.status === 429) {
      await retry.wait();
      if (!done) offset = -1;
      continue;
    }
    if (done) return null; // staged, but the upload's record is gone: the list shows the file
    throw new Error(await apiMessage(xhr));
  }
}
