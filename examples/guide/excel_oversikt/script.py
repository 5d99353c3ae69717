"""Översikt av en Excel-fil: reading an .xlsx upload with openpyxl.

read_only=True streams the sheets instead of loading them whole, and data_only=True
gives the values formulas last computed rather than the formulas.
"""
from numbers import Number

from openpyxl import load_workbook
from skriptoteket_toolkit import list_input_files, read_settings
from tool_errors import ToolUserError


def cell(v):
    return v if v is None or isinstance(v, (str, int, float, bool)) else str(v)


def run_tool(input_dir, output_dir):
    files = list_input_files()
    if not files:
        raise ToolUserError("Ladda upp en .xlsx-fil.")
    try:
        wb = load_workbook(files[0]["path"], read_only=True, data_only=True)
    except Exception as e:
        raise ToolUserError(f"{files[0]['name']} går inte att läsa som Excel-fil ({type(e).__name__}).") from None
    limit = read_settings().get("max_rader", 20)

    sheets = []
    for ws in wb.worksheets:
        sheets.append({"blad": ws.title, "rader": sum(1 for _ in ws.iter_rows(values_only=True))})
    rows = list(wb.worksheets[0].iter_rows(values_only=True))
    wb.close()
    if not rows:
        raise ToolUserError(f"Första bladet i {files[0]['name']} är tomt.")

    header = [str(h) if h is not None else f"kolumn {i + 1}" for i, h in enumerate(rows[0])]
    body = [dict(zip(header, map(cell, r))) for r in rows[1:]]
    sums = {}
    for h in header:
        values = [r[h] for r in body if r.get(h) is not None]
        if values and all(isinstance(v, Number) and not isinstance(v, bool) for v in values):
            sums[h] = sum(values)
    return {
        "outputs": [
            {"kind": "table", "title": "Blad",
             "columns": [{"key": "blad", "label": "Blad"}, {"key": "rader", "label": "Rader"}], "rows": sheets},
            {"kind": "table", "title": f"{sheets[0]['blad']} (de första {min(limit, len(body))} raderna)",
             "columns": [{"key": h, "label": h} for h in header], "rows": body[:limit]},
            {"kind": "json", "title": "Summor", "value": sums},
        ],
        "next_actions": [],
        "state": None,
    }
