// The editor's edit lock (part_maintainers.html): while the editor is open, tell the
// server every minute that it still is, so the others see who is editing; show who
// holds the lock when someone else does, with the time in the browser's zone. The lock
// blocks nothing: saving still works, the notice warns. Without this script the lock
// lapses after ten minutes and the notice shows the time in UTC.
"use strict";

(() => {
  const box = document.querySelector("[data-editlock]");
  if (!box) return;
  const text = box.querySelector("[data-editlock-text]");
  const hhmm = (iso) => {
    const d = new Date(iso);
    if (isNaN(d)) return "";
    return new Intl.DateTimeFormat(document.documentElement.lang || undefined, { hour: "2-digit", minute: "2-digit" }).format(d);
  };
  const show = (mine, name, since) => {
    box.hidden = mine;
    if (!mine) text.textContent = tr("editlock.held", { name: name, since: hhmm(since) });
  };
  if (!box.hidden) show(false, text.dataset.name, text.dataset.since);
  const beat = async () => {
    try {
      const res = await fetch(box.dataset.url, { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": box.dataset.csrf } });
      if (!res.ok) return;
      const l = await res.json();
      show(l.mine, l.name, l.since);
    } catch (e) {
      // Offline for a moment: the next beat tries again.
    }
  };
  setInterval(beat, Number(box.dataset.every || 60000));
})();
