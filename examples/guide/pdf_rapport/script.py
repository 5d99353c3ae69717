"""PDF-rapport: HTML from a jinja2 template, PDF from pdf_helper, checked with pypdf.

save_as_pdf renders with /work/ as the base URL, so the template reaches an uploaded
file as input/<name> (quoted: names may hold spaces). The file name may hold sub-folders: output/rapporter/ is made.
"""
import os
from urllib.parse import quote

from jinja2 import Environment
from pdf_helper import save_as_pdf
from pypdf import PdfReader
from skriptoteket_toolkit import list_input_files, read_inputs
from tool_errors import ToolUserError

TEMPLATE = Environment(autoescape=True).from_string("""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{ rubrik }}</title><style>
  @page { size: {{ sidstorlek }}; margin: 2cm; @bottom-center { content: "Sida " counter(page); } }
  body { font-family: 'Liberation Serif', serif; line-height: 1.4; }
  img { height: 2cm; float: right; }
</style></head><body>
  {% if logga %}<img src="input/{{ logga }}" alt="">{% endif %}
  <h1>{{ rubrik }}</h1>
  {% for stycke in stycken %}<p>{{ stycke }}</p>{% endfor %}
</body></html>""")


def run_tool(input_dir, output_dir):
    inputs = read_inputs()
    rubrik = inputs.get("rubrik")
    if not rubrik:
        raise ToolUserError("Skriv en rubrik.")
    stycken = [s.strip() for s in inputs.get("text", "").split("\n\n") if s.strip()]
    logos = list_input_files()
    html = TEMPLATE.render(
        rubrik=rubrik,
        stycken=stycken,
        sidstorlek=inputs.get("sidstorlek", "A4"),
        logga=quote(logos[0]["name"]) if logos else None,
    )
    path = save_as_pdf(html, output_dir, "rapporter/rapport.pdf")
    pages = len(PdfReader(path).pages)
    return {
        "outputs": [
            {"kind": "notice", "level": "info",
             "message": f"Rapporten är klar: {pages} sida/sidor, {os.path.getsize(path)} byte."},
        ],
        "next_actions": [],
        "state": None,
    }
