// The tool page: a form that discards something (the kept files) asks first. Without
// this script the form still works; it just does not ask.
"use strict";

document.querySelectorAll("form[data-confirm]").forEach((form) => {
  form.addEventListener("submit", (ev) => {
    if (!window.confirm(form.dataset.confirm)) ev.preventDefault();
  });
});
