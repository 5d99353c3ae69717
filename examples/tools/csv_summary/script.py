"""Summarise every column of the uploaded CSV files."""
import csv
import io
import os

import skrip_toolkit as tk
from skrip_toolkit import ToolUserError


def sniff(text):
    try:
        return csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        return csv.excel


def summarise(path):
    with open(path, encoding="utf-8-sig", newline="") as f:
        text = f.read()
    rows = list(csv.reader(io.StringIO(text), sniff(text)))
    if not rows:
        return None, 0
    header, body = rows[0], rows[1:]
    out = []
    for i, name in enumerate(header):
        values = [r[i].strip() for r in body if i < len(r) and r[i].strip() != ""]
        numbers = []
        for v in values:
            try:
                numbers.append(float(v.replace(",", ".")))
            except ValueError:
                pass
        row = {"column": name or f"(kolumn {i + 1})", "values": len(values), "empty": len(body) - len(values)}
        if values and len(numbers) == len(values):
            row.update({"type": "tal", "min": min(numbers), "max": max(numbers),
                        "mean": round(sum(numbers) / len(numbers), 3)})
        else:
            row.update({"type": "text", "min": "", "max": "", "mean": ""})
        out.append(row)
    return out, len(body)


def run_tool(input_dir, output_dir):
    files = [f for f in tk.input_files() if f["name"].lower().endswith((".csv", ".tsv", ".txt"))]
    if not files:
        raise ToolUserError("Ladda upp minst en .csv-fil.")
    outputs = []
    for f in files:
        summary, count = summarise(f["path"])
        if summary is None:
            outputs.append({"kind": "notice", "level": "warning", "message": f"{f['name']} är tom."})
            continue
        outputs.append({"kind": "notice", "level": "info", "message": f"{f['name']}: {count} {'rad' if count == 1 else 'rader'}, {len(summary)} {'kolumn' if len(summary) == 1 else 'kolumner'}."})
        outputs.append({
            "kind": "table", "title": f["name"],
            "columns": [{"key": k, "label": label} for k, label in
                        [("column", "Kolumn"), ("type", "Typ"), ("values", "Värden"), ("empty", "Tomma"),
                         ("min", "Minsta"), ("max", "Största"), ("mean", "Medel")]],
            "rows": summary,
        })
    return {"outputs": outputs}
