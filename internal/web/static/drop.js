// An upload link's page: the chosen file is PUT to the page's own address, with a
// progress bar; a refusal is told in the page's language (refusalMessage, app.js).
(function () {
  const form = document.getElementById("drop-form");
  if (!form) return;
  const input = document.getElementById("drop-file");
  const bar = document.getElementById("drop-progress");
  const status = document.getElementById("drop-status");
  const button = form.querySelector("button");
  const fill = (s, vals) => s.replace(/\{(\w+)\}/g, (_, k) => vals[k]);
  const size = (n) => n < 1000 ? n + " B" : n < 1e6 ? (n / 1e3).toFixed(1) + " kB" : (n / 1e6).toFixed(1) + " MB";
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const file = input.files[0];
    if (!file) return;
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", location.pathname + "?filename=" + encodeURIComponent(file.name));
    if (file.type) xhr.setRequestHeader("Content-Type", file.type);
    bar.hidden = false;
    bar.value = 0;
    button.disabled = true;
    status.textContent = fill(form.dataset.sending, { percent: 0 });
    xhr.upload.onprogress = (e) => {
      if (!e.lengthComputable) return;
      const p = Math.floor(100 * e.loaded / e.total);
      bar.value = p;
      status.textContent = fill(form.dataset.sending, { percent: p });
    };
    xhr.onload = async () => {
      button.disabled = false;
      if (xhr.status === 201) {
        const f = JSON.parse(xhr.responseText);
        bar.value = 100;
        status.textContent = fill(form.dataset.done, { name: f.name, size: size(f.size_bytes) });
        status.dataset.done = "";
        form.reset();
        return;
      }
      bar.hidden = true;
      status.textContent = await refusalMessage(xhr.responseText, xhr.status);
    };
    xhr.onerror = () => {
      button.disabled = false;
      bar.hidden = true;
      status.textContent = fill(form.dataset.sending, { percent: "—" });
    };
    xhr.send(file);
  });
})();
