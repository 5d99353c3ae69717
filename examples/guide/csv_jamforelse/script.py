"""Jämför två CSV-filer: a tool that reads several uploaded files together.

The files come from the manifest (list_input_files), sorted by name so the result does
not depend on upload order. Each file's delimiter is sniffed on its own: one may use
commas and the other semicolons.
"""
import csv
import os

from skriptoteket_toolkit import list_input_files, read_inputs
from tool_errors import ToolUserError


def read_table(path):
    with open(path, encoding="utf-8-sig", newline="") as f:
        text = f.read()
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.DictReader(text.splitlines(), dialect=dialect))
    return rows, (list(rows[0].keys()) if rows else [])


def run_tool(input_dir, output_dir):
    files = sorted(list_input_files(), key=lambda f: f["name"].lower())
    if len(files) != 2:
        raise ToolUserError(f"Ladda upp exakt två CSV-filer (du laddade upp {len(files)}).")
    (a_rows, a_cols), (b_rows, b_cols) = (read_table(f["path"]) for f in files)
    a_name, b_name = files[0]["name"], files[1]["name"]
    key = read_inputs().get("nyckel") or (a_cols[0] if a_cols else "")
    for name, cols in ((a_name, a_cols), (b_name, b_cols)):
        if key not in cols:
            raise ToolUserError(f"{name} saknar kolumnen {key!r}. Kolumner: {', '.join(cols)}.")

    a = {r[key]: r for r in a_rows}
    b = {r[key]: r for r in b_rows}
    diffs = []
    for k in sorted(a.keys() - b.keys()):
        diffs.append({"nyckel": k, "andring": f"bara i {a_name}", "detaljer": ""})
    for k in sorted(b.keys() - a.keys()):
        diffs.append({"nyckel": k, "andring": f"bara i {b_name}", "detaljer": ""})
    for k in sorted(a.keys() & b.keys()):
        changed = [f"{c}: {a[k].get(c)} → {b[k].get(c)}" for c in a_cols if c in b_cols and a[k].get(c) != b[k].get(c)]
        if changed:
            diffs.append({"nyckel": k, "andring": "ändrad", "detaljer": "; ".join(changed)})

    with open(os.path.join(output_dir, "skillnader.csv"), "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["nyckel", "andring", "detaljer"])
        w.writeheader()
        w.writerows(diffs)

    level = "info" if not diffs else "warning"
    message = "Filerna är lika." if not diffs else f"{len(diffs)} skillnad(er) mellan {a_name} och {b_name}."
    return {
        "outputs": [
            {"kind": "notice", "level": level, "message": message},
            {"kind": "table", "title": f"Skillnader (nyckel: {key})",
             "columns": [{"key": "nyckel", "label": key}, {"key": "andring", "label": "Ändring"},
                         {"key": "detaljer", "label": "Detaljer"}],
             "rows": diffs},
        ],
        "next_actions": [],
        "state": None,
    }
