// Schemas as forms (templates/part_schema.html). Each schema box (input_schema,
// settings_schema) gets a field list beside it: every field's kind, name, label,
// options, and the file field's accept, min and max, as form controls, with buttons to
// add, remove and move fields. The list and the JSON box are kept in step: a change in
// the list writes the JSON at once, and JSON typed in the box is read back into the list
// when it is a list of fields. The box stays the form's field, so the page works without
// this script, and the server checks the schema when it is saved; the problems listed
// here are its rules (contract.ParseInputSchema), told before saving.
"use strict";

(() => {
  const KINDS = {
    input: ["string", "text", "integer", "number", "boolean", "enum", "file"],
    settings: ["string", "text", "integer", "number", "boolean", "enum", "multi_enum"],
  };
  const FIELD_KEYS = ["name", "label", "kind", "options"];
  const FILE_KEYS = ["accept", "min", "max"];
  const MAX_FIELDS = 50, MAX_NAME_BYTES = 100;
  const ACCEPT = /^(\.[A-Za-z0-9_+-]{1,16}){1,3}$/;
  // The names a field's buttons are read out by, which say which field they act on.
  const BUTTON_NAMES = { up: "schema.up_field", down: "schema.down_field", remove: "schema.remove_field", "add-option": "schema.add_option_to" };
  const hasOptions = (kind) => kind === "enum" || kind === "multi_enum";
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const isWhole = (v) => typeof v === "number" && Number.isInteger(v);

  const el = (tag, props, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "dataset") Object.assign(e.dataset, v);
      else if (k in e && typeof v !== "string") e[k] = v;
      else e.setAttribute(k, v === true ? "" : v);
    }
    e.append(...children.filter(Boolean));
    return e;
  };

  // problems lists what the server would refuse in fields, by its rules: each {i, prop,
  // msg}, i the field's position (-1: the whole schema) and prop the control to mark.
  function problems(fields, which, maxFiles) {
    const out = [];
    if (fields.length > MAX_FIELDS) out.push({ i: -1, msg: tr("schema.too_many", { n: fields.length, max: MAX_FIELDS }) });
    const names = new Map();
    let fileAt = -1;
    fields.forEach((f, i) => {
      const name = typeof f.name === "string" ? f.name.trim() : "";
      const at = name ? tr("schema.field_named", { n: i + 1, name }) : tr("schema.field_n", { n: i + 1 });
      const add = (prop, key, vars) => out.push({ i, prop, msg: at + ": " + tr(key, vars) });
      const known = f.kind === "file" ? FIELD_KEYS.concat(FILE_KEYS) : FIELD_KEYS;
      for (const k of Object.keys(f)) {
        if (known.includes(k)) continue;
        if (FILE_KEYS.includes(k)) add(k, "schema.file_only", { key: k });
        else add("name", "schema.unknown_key", { key: k });
      }
      if (!name) add("name", "schema.no_name");
      else if (new TextEncoder().encode(name).length > MAX_NAME_BYTES) add("name", "schema.long_name", { max: MAX_NAME_BYTES });
      else if (names.has(name)) add("name", "schema.duplicate", { other: names.get(name) + 1 });
      else names.set(name, i);
      if (f.label !== undefined && typeof f.label !== "string") add("label", "schema.label_text");
      if (!KINDS[which].includes(f.kind)) add("kind", "schema.bad_kind", { kinds: KINDS[which].join(", ") });
      if (hasOptions(f.kind)) {
        const opts = Array.isArray(f.options) ? f.options : [];
        if (opts.length === 0) add("options", "schema.no_options");
        const seen = new Set();
        opts.forEach((o, j) => {
          const v = isObject(o) && typeof o.value === "string" ? o.value.trim() : "";
          if (!v) add("opt" + j, "schema.empty_option", { n: j + 1 });
          else if (seen.has(v)) add("opt" + j, "schema.repeated_option", { value: v });
          seen.add(v);
        });
      } else if (Array.isArray(f.options) && f.options.length) {
        add("kind", "schema.options_not_here");
      }
      if (f.kind !== "file") return;
      if (fileAt >= 0) add("kind", "schema.second_file", { other: fileAt + 1 });
      else fileAt = i;
      const min = f.min === undefined ? 0 : f.min;
      if (!isWhole(min) || min < 0) add("min", "schema.bad_min");
      if (f.max === undefined) add("max", "schema.no_max");
      else if (!isWhole(f.max) || f.max < 1) add("max", "schema.bad_max");
      else if (isWhole(min) && min > f.max) add("min", "schema.min_over_max", { min, max: f.max });
      else if (maxFiles > 0 && f.max > maxFiles) add("max", "schema.over_cap", { max: f.max, cap: maxFiles });
      if (f.accept !== undefined) {
        const list = Array.isArray(f.accept) ? f.accept : [null];
        const bad = list.filter((a) => typeof a !== "string" || !ACCEPT.test(a.trim()));
        if (bad.length) add("accept", "schema.bad_accept", { entry: String(bad[0]) });
      }
    });
    return out;
  }

  function setup(box, maxFiles) {
    const which = box.dataset.schema;
    if (!KINDS[which]) return;
    const errorBox = document.getElementById(box.id + "-error");
    const base = box.id + "-f";
    let fields = null; // the schema as the list shows it; null: the box holds none
    let readable = true; // the box holds a list of fields the list can show

    const list = el("ol", { class: "schema-fields" });
    const none = el("p", { class: "hint", text: tr(which === "input" ? "schema.none_input" : "schema.none_settings") });
    const stale = el("p", { class: "field-error", text: tr("schema.unreadable"), hidden: true });
    const addButton = el("button", { type: "button", class: "secondary small", text: tr("schema.add_field"), dataset: { act: "add" } });
    const problemList = el("ul", {});
    const problemBox = el("div", { class: "schema-problems", role: "status", hidden: true },
      el("p", { text: tr("schema.problems") }), problemList);
    const group = el("fieldset", { class: "schema-form-fields" },
      el("legend", { text: tr(which === "input" ? "schema.form_input" : "schema.form_settings") }),
      el("p", { class: "hint", text: tr("schema.name_hint") }), none, list, el("div", { class: "row" }, addButton));
    const formSide = el("div", { class: "schema-side" }, stale, group, problemBox);
    const jsonSide = el("div", { class: "schema-side" }, el("p", { class: "schema-caption", "aria-hidden": "true", text: tr("schema.json") }));
    const wrap = el("div", { class: "schema-edit", dataset: { schemaForm: which } }, formSide, jsonSide);
    box.before(wrap);
    jsonSide.append(box);

    const id = (i, prop) => base + i + "-" + prop;
    const control = (i, prop, labelText, input, hint) => {
      input.id = id(i, prop);
      input.dataset.i = i;
      input.dataset.prop = prop;
      const parts = [el("label", { for: input.id, text: labelText }), input];
      if (hint) {
        parts.push(el("span", { class: "hint", id: input.id + "-hint", text: hint }));
        input.setAttribute("aria-describedby", input.id + "-hint");
      }
      return el("div", { class: "schema-control" }, ...parts);
    };
    const text = (v) => (typeof v === "string" || typeof v === "number" ? String(v) : "");

    function fieldItem(f, i) {
      const name = typeof f.name === "string" && f.name.trim() ? f.name.trim() : "";
      const title = name ? tr("schema.field_named", { n: i + 1, name }) : tr("schema.field_n", { n: i + 1 });
      const kind = el("select", {});
      const kinds = KINDS[which].includes(f.kind) ? KINDS[which] : [f.kind].concat(KINDS[which]);
      for (const k of kinds) kind.append(el("option", { value: text(k), text: tr("schema.kind_" + k) === "schema.kind_" + k ? text(k) : tr("schema.kind_" + k), selected: k === f.kind }));
      const set = el("fieldset", { class: "schema-field", dataset: { field: i } }, el("legend", { text: title }),
        el("div", { class: "schema-grid" },
          control(i, "kind", tr("schema.kind"), kind),
          control(i, "name", tr("schema.name"), el("input", { type: "text", value: text(f.name), autocomplete: "off", spellcheck: "false" })),
          control(i, "label", tr("schema.label"), el("input", { type: "text", value: text(f.label), autocomplete: "off" }))));
      if (hasOptions(f.kind)) {
        const opts = Array.isArray(f.options) ? f.options : [];
        const ol = el("ol", { class: "schema-options" });
        opts.forEach((o, j) => {
          const ob = isObject(o) ? o : {};
          const remove = el("button", { type: "button", class: "secondary small", text: tr("schema.remove"),
            "aria-label": tr("schema.remove_option", { n: j + 1 }), dataset: { act: "remove-option", i, j } });
          ol.append(el("li", { class: "schema-option" },
            control(i, "opt" + j + "-value", tr("schema.option_value", { n: j + 1 }), el("input", { type: "text", value: text(ob.value), autocomplete: "off", spellcheck: "false", dataset: { j } })),
            control(i, "opt" + j + "-label", tr("schema.option_label", { n: j + 1 }), el("input", { type: "text", value: text(ob.label), autocomplete: "off", dataset: { j } })),
            remove));
        });
        set.append(el("fieldset", { class: "schema-option-list", id: id(i, "options") }, el("legend", { text: tr("schema.options") }), ol,
          el("button", { type: "button", id: id(i, "add-option"), class: "secondary small", text: tr("schema.add_option"), "aria-label": tr(BUTTON_NAMES["add-option"], { field: title }), dataset: { act: "add-option", i } })));
      }
      if (f.kind === "file") {
        const accept = Array.isArray(f.accept) ? f.accept.map(text).join(", ") : text(f.accept);
        set.append(el("div", { class: "schema-grid" },
          control(i, "accept", tr("schema.accept"), el("input", { type: "text", value: accept, autocomplete: "off", spellcheck: "false" }), tr("schema.accept_hint")),
          control(i, "min", tr("schema.min"), el("input", { type: "number", min: "0", step: "1", inputmode: "numeric", value: text(f.min) })),
          control(i, "max", tr("schema.max"), el("input", { type: "number", min: "1", step: "1", inputmode: "numeric", value: text(f.max) }), maxFiles > 0 ? tr("schema.max_hint", { cap: maxFiles }) : "")));
      }
      const move = (act, disabled) => el("button", { type: "button", id: id(i, act), class: "secondary small", text: tr("schema." + act),
        "aria-label": tr(BUTTON_NAMES[act], { field: title }), disabled, dataset: { act, i } });
      set.append(el("div", { class: "row schema-moves" },
        move("up", i === 0), move("down", i === fields.length - 1), move("remove", false)));
      return el("li", {}, set);
    }

    // render shows fields in the list, and then focuses the control named focusID.
    function render(focusID) {
      stale.hidden = readable;
      group.disabled = !readable;
      if (!readable) { problemBox.hidden = true; return; }
      list.replaceChildren(...(fields || []).map(fieldItem));
      none.hidden = Boolean(fields && fields.length);
      check();
      if (focusID) {
        const target = document.getElementById(focusID);
        (target && !target.disabled ? target : addButton).focus();
      }
    }

    // check lists the problems and marks the controls they name.
    function check() {
      list.querySelectorAll("[aria-invalid]").forEach((c) => c.removeAttribute("aria-invalid"));
      const found = readable && fields ? problems(fields, which, maxFiles) : [];
      problemList.replaceChildren(...found.map((p) => el("li", { text: p.msg })));
      problemBox.hidden = found.length === 0;
      for (const p of found) {
        if (p.i < 0) continue;
        const target = document.getElementById(id(p.i, p.prop)) || document.getElementById(id(p.i, p.prop + "-value"));
        if (target) target.setAttribute("aria-invalid", "true");
      }
    }

    // write puts the list's schema in the box, as the server would indent it; no fields
    // is no schema.
    function write() {
      box.value = fields && fields.length ? JSON.stringify(fields, null, 2) : "";
      // The box now holds JSON the list made: an earlier message about it is out of date.
      if (errorBox && !errorBox.hidden) {
        errorBox.textContent = "";
        errorBox.hidden = true;
        box.removeAttribute("aria-invalid");
      }
      check();
    }

    // read takes the box's JSON into the list when it is a list of fields.
    function read() {
      const raw = box.value.trim();
      if (raw === "" || raw === "null") { fields = null; readable = true; return; }
      try {
        const v = JSON.parse(raw);
        readable = Array.isArray(v) && v.every(isObject);
        if (readable) fields = v;
      } catch (e) {
        readable = false;
      }
    }

    let timer = 0;
    const follow = () => { clearTimeout(timer); timer = 0; read(); render(); };
    // The list never acts on (and writes back) a schema older than what was just typed in
    // the box: JSON not read yet is read first. (Not when the box loses the focus: the
    // list drawn again between a button's mousedown and mouseup would lose the click.)
    list.addEventListener("input", (e) => {
      if (timer) { follow(); return; }
      const c = e.target, i = +c.dataset.i, prop = c.dataset.prop;
      const f = fields && fields[i];
      if (!f || prop === "kind") return;
      if (prop === "name" || prop === "label") f[prop] = c.value;
      else if (prop === "accept") {
        const entries = c.value.split(/[\s,]+/).filter(Boolean);
        if (entries.length) f.accept = entries; else delete f.accept;
      } else if (prop === "min" || prop === "max") {
        if (c.value === "") delete f[prop]; else f[prop] = Number(c.value);
      } else if (prop.startsWith("opt")) {
        const j = +c.dataset.j;
        if (!isObject(f.options[j])) f.options[j] = {};
        f.options[j][prop.endsWith("-value") ? "value" : "label"] = c.value;
      }
      if (prop === "name") {
        // The field's title follows its name: the legend and its buttons' names.
        const set = c.closest("fieldset.schema-field");
        const name = c.value.trim();
        const title = name ? tr("schema.field_named", { n: i + 1, name }) : tr("schema.field_n", { n: i + 1 });
        set.querySelector("legend").textContent = title;
        set.querySelectorAll("button[data-act]").forEach((b) => {
          const key = BUTTON_NAMES[b.dataset.act];
          if (key) b.setAttribute("aria-label", tr(key, { field: title }));
        });
      }
      write();
    });
    list.addEventListener("change", (e) => {
      if (timer) { follow(); return; }
      const c = e.target, i = +c.dataset.i;
      if (c.dataset.prop !== "kind" || !fields || !fields[i]) return;
      const f = fields[i];
      f.kind = c.value;
      // A field keeps only the keys of its kind, which the server would refuse else.
      if (hasOptions(f.kind)) { if (!Array.isArray(f.options) || !f.options.length) f.options = [{ value: "", label: "" }]; } else delete f.options;
      if (f.kind === "file") { if (f.max === undefined) f.max = 1; } else FILE_KEYS.forEach((k) => delete f[k]);
      write();
      render(id(i, "kind"));
    });
    wrap.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-act]");
      if (!b) return;
      if (timer) follow();
      if (!readable) return;
      const act = b.dataset.act, i = +b.dataset.i;
      let focus = "";
      if (act === "add") {
        fields = fields || [];
        fields.push({ name: "", label: "", kind: "string" });
        focus = id(fields.length - 1, "name");
      } else if (act === "remove") {
        fields.splice(i, 1);
        focus = fields.length ? id(Math.min(i, fields.length - 1), "remove") : "";
      } else if (act === "up" || act === "down") {
        const to = act === "up" ? i - 1 : i + 1;
        [fields[i], fields[to]] = [fields[to], fields[i]];
        // The same button on the moved field, or the other one at the end of the list.
        const end = act === "up" ? to === 0 : to === fields.length - 1;
        focus = id(to, end ? (act === "up" ? "down" : "up") : act);
      } else if (act === "add-option") {
        if (!Array.isArray(fields[i].options)) fields[i].options = [];
        fields[i].options.push({ value: "", label: "" });
        focus = id(i, "opt" + (fields[i].options.length - 1) + "-value");
      } else if (act === "remove-option") {
        fields[i].options.splice(+b.dataset.j, 1);
        focus = id(i, "add-option");
      }
      write();
      render(focus || addButton.id);
    });
    box.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(follow, 300);
    });

    // The add button has an id, as every button of the list, so that the focus can come
    // back to it after the list is drawn again.
    addButton.id = base + "add";
    read();
    render();
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("[data-schema-boxes]").forEach((boxes) => {
      const cap = +boxes.dataset.maxFiles || 0;
      boxes.querySelectorAll("textarea[data-schema]").forEach((box) => setup(box, cap));
    });
  });
})();
