"""HTML till PDF: preview uploaded HTML pages, then convert them to PDF with WeasyPrint.

1. The initial run takes one or more .html/.htm files plus the CSS and images they use.
   It shows which pages were found, a self-contained preview of the first page and a
   table of the files, and offers the actions "convert" and "reset".
2. "convert" renders the original uploaded files from the input directory with
   WeasyPrint (the input directory is the base URL, so relative CSS and images resolve)
   and writes output/<stem>.pdf for each page.
3. "reset" ends the session's steps. The files stay with the session: a new run without
   files uses them again (as the tool page says), one with files replaces them.

WeasyPrint is imported only in the convert step, so the preview works without it.
"""
import base64
import mimetypes
import os
import re

import skrip_toolkit as tk
from skrip_toolkit import ToolUserError

HTML_EXT = (".html", ".htm")
CSS_EXT = (".css",)
IMAGE_EXT = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".ico")

PAGE_SIZES = {"a4": "A4", "letter": "letter"}
ORIENTATIONS = ("portrait", "landscape")

# html_sandboxed outputs are capped at 96 KiB; leave room for the page itself.
PREVIEW_MAX = 90 * 1024


def uploaded():
    """The user's files (action.json excluded), by name."""
    return {f["name"]: f for f in tk.input_files()}


def html_names(files):
    return sorted((n for n in files if n.lower().endswith(HTML_EXT)), key=str.lower)


def kind_of(name):
    low = name.lower()
    if low.endswith(HTML_EXT):
        return "HTML"
    if low.endswith(CSS_EXT):
        return "CSS"
    if low.endswith(IMAGE_EXT):
        return "bild"
    return "övrigt"


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def local_name(ref, files):
    """The uploaded file a relative reference points at, or None."""
    ref = ref.strip()
    if not ref or re.match(r"^[a-z][a-z0-9+.-]*:|^//|^#", ref, re.I):
        return None
    name = os.path.basename(ref.split("#")[0].split("?")[0])
    return name if name in files else None


def data_uri(path):
    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    if path.lower().endswith(".svg"):
        kind = "image/svg+xml"
    with open(path, "rb") as f:
        return f"data:{kind};base64," + base64.b64encode(f.read()).decode()


class Embedder:
    """Turns references to uploaded images into data: URIs, within a size budget."""

    def __init__(self, files, budget):
        self.files = files
        self.budget = budget
        self.skipped = set()

    def uri(self, ref):
        name = local_name(ref, self.files)
        if name is None or kind_of(name) != "bild":
            return None
        size = self.files[name].get("bytes") or os.path.getsize(self.files[name]["path"])
        encoded = (size + 2) // 3 * 4 + 40
        if encoded > self.budget:
            self.skipped.add(name)
            return None
        self.budget -= encoded
        return data_uri(self.files[name]["path"])


def inline_css_urls(css, emb):
    def repl(m):
        uri = emb.uri(m.group(2))
        return f'url("{uri}")' if uri else m.group(0)

    return re.sub(r"""url\(\s*(["']?)([^"')]+)\1\s*\)""", repl, css)


def preview_html(page, files):
    """A self-contained copy of page: uploaded CSS inlined, uploaded images as data: URIs.

    A sandboxed preview cannot load relative files, so everything it needs goes inline.
    Returns (html, names of images left out to stay under the size cap).
    """
    source = read_text(files[page]["path"])
    emb = Embedder(files, PREVIEW_MAX - len(source.encode()))

    def link(m):
        tag = m.group(0)
        if not re.search(r"""rel\s*=\s*["']?[^"'>]*stylesheet""", tag, re.I):
            return tag
        href = re.search(r"""href\s*=\s*(["'])(.*?)\1|href\s*=\s*([^\s>]+)""", tag, re.I)
        if not href:
            return tag
        name = local_name(href.group(2) if href.group(2) is not None else href.group(3), files)
        if name is None or kind_of(name) != "CSS":
            return tag
        css = read_text(files[name]["path"])
        emb.budget -= len(css.encode())
        return "<style>\n" + inline_css_urls(css, emb).replace("</style", "<\\/style") + "\n</style>"

    def style_block(m):
        return m.group(1) + inline_css_urls(m.group(2), emb) + m.group(3)

    def src(m):
        uri = emb.uri(m.group(3))
        return f'{m.group(1)}="{uri}"' if uri else m.group(0)

    html = re.sub(r"<link\b[^>]*>", link, source, flags=re.I)
    html = re.sub(r"(<style\b[^>]*>)(.*?)(</style>)", style_block, html, flags=re.I | re.S)
    html = re.sub(r"""\b(src|poster)\s*=\s*(["'])(.*?)\2""", src, html, flags=re.I)
    html = re.sub(r"""(\bstyle\s*=\s*")([^"]*)(")""", style_block, html, flags=re.I)
    return html, sorted(emb.skipped)


def convert_action(prefill):
    return {
        "action_id": "convert",
        "label": "Konvertera till PDF",
        "kind": "form",
        "fields": [
            {"name": "page_size", "label": "Sidstorlek", "kind": "enum",
             "options": [{"value": "a4", "label": "A4"}, {"value": "letter", "label": "Letter"}]},
            {"name": "orientation", "label": "Orientering", "kind": "enum",
             "options": [{"value": "portrait", "label": "Stående"}, {"value": "landscape", "label": "Liggande"}]},
        ],
        "prefill": prefill,
    }


RESET_ACTION = {"action_id": "reset", "label": "Börja om", "kind": "form", "fields": []}


def initial(files):
    pages = html_names(files)
    if not pages:
        raise ToolUserError(
            "Ingen HTML-fil hittades. Ladda upp minst en .html- eller .htm-fil, tillsammans med "
            "CSS och bilder den använder. (No HTML file found: upload at least one .html or .htm file.)")
    outputs = [{"kind": "notice", "level": "info",
                "message": f"Hittade {len(pages)} HTML-fil(er): {', '.join(pages)}. "
                           "Förhandsvisningen nedan visar " + pages[0] + ". "
                           "Välj sidstorlek och orientering och konvertera till PDF."}]
    preview, skipped = preview_html(pages[0], files)
    if skipped:
        outputs.append({"kind": "notice", "level": "warning",
                        "message": "Förhandsvisningen utelämnar stora bilder: " + ", ".join(skipped)
                                   + ". De kommer med i PDF:en."})
    if len(preview.encode()) > PREVIEW_MAX:
        outputs.append({"kind": "notice", "level": "warning",
                        "message": f"{pages[0]} är för stor för att förhandsvisas; den kan ändå konverteras."})
    else:
        outputs.append({"kind": "html_sandboxed", "html": preview})
    rows = [{"name": n, "kind": kind_of(n), "bytes": files[n].get("bytes")}
            for n in sorted(files, key=lambda n: (kind_of(n) != "HTML", n.lower()))]
    outputs.append({"kind": "table", "title": "Uppladdade filer",
                    "columns": [{"key": "name", "label": "Fil"}, {"key": "kind", "label": "Typ"},
                                {"key": "bytes", "label": "Byte"}],
                    "rows": rows})
    return {
        "outputs": outputs,
        "next_actions": [convert_action({"page_size": "a4", "orientation": "portrait"}), RESET_ACTION],
        "state": {"step": "preview", "html_files": pages},
    }


def import_weasyprint():
    # The sandbox's root is read-only; fontconfig wants a writable cache.
    os.environ.setdefault("XDG_CACHE_HOME", os.path.join(os.environ.get("HOME") or "/tmp/home", ".cache"))
    try:
        os.makedirs(os.environ["XDG_CACHE_HOME"], exist_ok=True)
    except OSError:
        pass
    try:
        import weasyprint
    except Exception as e:  # ImportError, or a missing native library (OSError)
        raise ToolUserError(f"WeasyPrint finns inte installerat på den här servern: {type(e).__name__}: {e}") from None
    return weasyprint


def convert(files, act, input_dir, output_dir):
    values = act.get("input") or {}
    state = act.get("state") or {}
    page_size = values.get("page_size") or "a4"
    orientation = values.get("orientation") or "portrait"
    if page_size not in PAGE_SIZES:
        raise ToolUserError(f"Okänd sidstorlek {page_size!r}: välj a4 eller letter.")
    if orientation not in ORIENTATIONS:
        raise ToolUserError(f"Okänd orientering {orientation!r}: välj portrait eller landscape.")

    wanted = state.get("html_files") if isinstance(state.get("html_files"), list) else None
    pages = [n for n in (wanted or html_names(files)) if isinstance(n, str)]
    present = [n for n in pages if n in files and n.lower().endswith(HTML_EXT)]
    missing = [n for n in pages if n not in present]
    if not present:
        raise ToolUserError(
            "De uppladdade HTML-filerna finns inte längre. Ladda upp dem igen och starta om. "
            "(The uploaded HTML files are gone: upload them again.)")

    weasyprint = import_weasyprint()
    page_css = weasyprint.CSS(string=f"@page {{ size: {PAGE_SIZES[page_size]} {orientation}; }}")
    base_url = os.path.join(input_dir, "")

    rows, pdfs, used = [], [], set()
    for name in present:
        stem = os.path.splitext(name)[0] or "page"
        pdf = stem + ".pdf"
        n = 2
        while pdf.lower() in used:
            pdf = f"{stem}-{n}.pdf"
            n += 1
        used.add(pdf.lower())
        try:
            doc = weasyprint.HTML(filename=files[name]["path"], base_url=base_url).render(stylesheets=[page_css])
            out = os.path.join(output_dir, pdf)
            doc.write_pdf(out)
        except Exception as e:
            raise ToolUserError(f"Kunde inte konvertera {name}: {type(e).__name__}: {e}") from None
        rows.append({"file": name, "pdf": pdf, "pages": len(doc.pages), "bytes": os.path.getsize(out)})
        pdfs.append(pdf)

    label = f"{PAGE_SIZES[page_size]}, {'liggande' if orientation == 'landscape' else 'stående'}"
    outputs = [{"kind": "notice", "level": "info",
                "message": f"Klart: {len(pdfs)} PDF-fil(er) ({label}). "
                           "Ladda ner dem med knapparna överst i resultatet."}]
    if missing:
        outputs.append({"kind": "notice", "level": "warning",
                        "message": "Hittades inte och konverterades inte: " + ", ".join(missing)})
    outputs.append({"kind": "table", "title": "PDF-filer",
                    "columns": [{"key": "file", "label": "HTML-fil"}, {"key": "pdf", "label": "PDF"},
                                {"key": "pages", "label": "Sidor"}, {"key": "bytes", "label": "Byte"}],
                    "rows": rows})
    return {
        "outputs": outputs,
        "next_actions": [convert_action({"page_size": page_size, "orientation": orientation}), RESET_ACTION],
        "state": {"step": "converted", "html_files": present, "pdfs": pdfs},
    }


def run_tool(input_dir, output_dir):
    files = uploaded()
    act = tk.action()
    if act is None:
        return initial(files)
    action_id = act.get("action_id")
    if action_id == "convert":
        return convert(files, act, input_dir, output_dir)
    if action_id == "reset":
        return {"outputs": [{"kind": "notice", "level": "info",
                             "message": "Börjat om. Dina filer finns kvar på verktygets sida: kör verktyget "
                                        "utan att välja nya filer för att använda dem igen, eller välj nya "
                                        "HTML-filer, med CSS och bilder, som ersätter dem."}],
                "state": {}}
    raise ToolUserError(f"Okänd åtgärd: {action_id!r}")
