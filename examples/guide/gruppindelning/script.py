"""Gruppindelning: split a class list into groups, and print them as a PDF.

Written only against the original hub's documented runtime (skriptoteket_toolkit,
tool_errors and pdf_helper), so it runs unchanged wherever that runtime is.
"""
import csv
import html
import math
import random
from pathlib import Path

from pdf_helper import save_as_pdf
from skriptoteket_toolkit import get_action_parts, list_input_files, read_inputs, read_settings
from tool_errors import ToolUserError

HEADERS = {"namn", "name", "elev", "elever"}


def read_names(path: Path) -> list[str]:
    if path.suffix.lower() == ".xlsx":
        from openpyxl import load_workbook

        wb = load_workbook(path, read_only=True, data_only=True)
        cells = [row[0] for row in wb.active.iter_rows(values_only=True) if row]
        wb.close()
    else:
        text = path.read_text(encoding="utf-8-sig")
        try:
            dialect = csv.Sniffer().sniff(text[:2048], delimiters=",;\t")
        except csv.Error:  # one column: no delimiter to find
            dialect = csv.excel
        cells = [row[0] for row in csv.reader(text.splitlines(), dialect) if row]
    names = [str(c).strip() for c in cells if c is not None and str(c).strip()]
    if names and names[0].lower() in HEADERS:
        names = names[1:]
    return names


def split(names: list[str], size: int, method: str, seed: int) -> list[list[str]]:
    ordered = sorted(names, key=str.casefold)
    if method == "slump":
        random.Random(seed).shuffle(ordered)
    count = math.ceil(len(ordered) / size)
    groups, start = [], 0
    for i in range(count):
        n = len(ordered) // count + (1 if i < len(ordered) % count else 0)
        groups.append(ordered[start:start + n])
        start += n
    return groups


def pdf_html(groups: list[list[str]], school: str) -> str:
    cards = "".join(
        f"<section><h2>Grupp {i}</h2><ul>{''.join(f'<li>{html.escape(n)}</li>' for n in g)}</ul></section>"
        for i, g in enumerate(groups, 1)
    )
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><style>
      @page {{ size: A4; margin: 2cm; }}
      body {{ font-family: 'DejaVu Sans', sans-serif; }}
      section {{ border: 1px solid #888; padding: 0 1em; margin-bottom: 1em; break-inside: avoid; }}
    </style></head><body><h1>Grupper</h1><p>{html.escape(school)}</p>{cards}</body></html>"""


def group_action(size: int, method: str) -> dict:
    return {
        "action_id": "ny_indelning",
        "label": "Ny indelning",
        "kind": "form",
        "fields": [
            {"name": "gruppstorlek", "label": "Elever per grupp", "kind": "integer"},
            {"name": "metod", "label": "Metod", "kind": "enum",
             "options": [{"value": "alfabetisk", "label": "Bokstavsordning"}, {"value": "slump", "label": "Slumpvis"}]},
        ],
        "prefill": {"gruppstorlek": size, "metod": method},
    }


def run_tool(input_dir: str, output_dir: str) -> dict:
    action_id, action_input, state = get_action_parts()
    values = action_input if action_id else read_inputs()
    size = values.get("gruppstorlek", 4)
    method = values.get("metod", "alfabetisk")
    make_pdf = values.get("pdf", state.get("pdf", False))
    if not isinstance(size, int) or size < 1:
        raise ToolUserError("Gruppstorleken måste vara ett heltal, minst 1.")

    # On an action run the list is the file uploaded at the start.
    lists = [Path(f["path"]) for f in list_input_files()]
    if not lists:
        raise ToolUserError("Ladda upp klasslistan (.csv, .txt eller .xlsx).")
    names = read_names(lists[0])
    if not names:
        raise ToolUserError(f"Hittade inga namn i {lists[0].name}.")

    round_no = state.get("omgang", 0) + 1
    groups = split(names, size, method, seed=round_no)
    outputs = [
        {"kind": "notice", "level": "info",
         "message": f"{len(names)} elever i {len(groups)} grupper ({'slumpvis' if method == 'slump' else 'bokstavsordning'})."},
        {"kind": "table", "title": "Grupper",
         "columns": [{"key": "grupp", "label": "Grupp"}, {"key": "elever", "label": "Elever"}],
         "rows": [{"grupp": i, "elever": ", ".join(g)} for i, g in enumerate(groups, 1)]},
    ]
    if make_pdf:
        pdf = save_as_pdf(pdf_html(groups, read_settings().get("skola", "")), output_dir, "grupper.pdf")
        outputs.append({"kind": "markdown", "markdown": f"Ladda ner **{Path(pdf).name}** och skriv ut."})
    return {
        "outputs": outputs,
        "next_actions": [group_action(size, method)],
        "state": {"omgang": round_no, "pdf": bool(make_pdf)},
    }
