"""Check an HTML page against the files uploaded with it, and show a self-contained preview."""
import base64
import html.parser
import mimetypes
import os
import re

import skrip_toolkit as tk
from skrip_toolkit import ToolUserError


class Refs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and "stylesheet" in (a.get("rel") or "") and a.get("href"):
            self.refs.append(("stylesheet", a["href"]))
        elif tag in ("img", "script", "source") and a.get("src"):
            self.refs.append((tag, a["src"]))


def local(ref):
    return not re.match(r"^[a-z][a-z0-9+.-]*:|^//|^#", ref, re.I)


def data_uri(path):
    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    with open(path, "rb") as f:
        return f"data:{kind};base64," + base64.b64encode(f.read()).decode()


def run_tool(input_dir, output_dir):
    files = {f["name"]: f for f in tk.input_files()}
    pages = sorted(n for n in files if n.lower().endswith((".html", ".htm")))
    if not pages:
        raise ToolUserError("Ladda upp en .html-fil tillsammans med CSS-filerna och bilderna den använder.")
    rows, missing, used = [], [], set()
    for page in pages:
        with open(files[page]["path"], encoding="utf-8", errors="replace") as f:
            source = f.read()
        p = Refs()
        p.feed(source)
        for kind, ref in p.refs:
            if not local(ref):
                rows.append({"page": page, "kind": kind, "reference": ref, "status": "extern (laddas inte)"})
                continue
            name = os.path.basename(ref.split("?")[0].split("#")[0])
            ok = name in files
            used.add(name)
            if not ok:
                missing.append(f"{page} → {ref}")
            rows.append({"page": page, "kind": kind, "reference": ref, "status": "uppladdad" if ok else "SAKNAS"})
    unused = sorted(n for n in files if n not in used and n not in pages)

    # A self-contained preview of the first page: CSS inlined, images as data URIs.
    with open(files[pages[0]]["path"], encoding="utf-8", errors="replace") as f:
        preview = f.read()

    def inline_css(m):
        name = os.path.basename(m.group(2))
        if name in files:
            with open(files[name]["path"], encoding="utf-8", errors="replace") as css:
                return "<style>" + css.read() + "</style>"
        return m.group(0)

    preview = re.sub(r"""<link[^>]*href=(["'])([^"']+)\1[^>]*>""", inline_css, preview)
    preview = re.sub(r"""(src=)(["'])([^"']+)\2""",
                     lambda m: m.group(1) + '"' + (data_uri(files[os.path.basename(m.group(3))]["path"])
                                                   if os.path.basename(m.group(3)) in files else m.group(3)) + '"',
                     preview)

    outputs = []
    if missing:
        outputs.append({"kind": "notice", "level": "warning",
                        "message": "Filer saknas: " + "; ".join(missing) + ". Ladda upp dem tillsammans med sidan."})
    else:
        outputs.append({"kind": "notice", "level": "info", "message": f"Alla {len(rows)} hänvisningar i {len(pages)} {'sida' if len(pages) == 1 else 'sidor'} hittades."})
    if unused:
        outputs.append({"kind": "notice", "level": "info", "message": "Uppladdade men används inte: " + ", ".join(unused)})
    outputs.append({"kind": "table", "title": "Hänvisningar",
                    "columns": [{"key": "page", "label": "Sida"}, {"key": "kind", "label": "Slag"},
                                {"key": "reference", "label": "Hänvisning"}, {"key": "status", "label": "Status"}],
                    "rows": rows})
    outputs.append({"kind": "html_sandboxed", "html": preview})
    return {"outputs": outputs}
