"""Statistik för en CSV-fil: summary statistics with pandas.

pandas reads the file with its delimiter sniffed (sep=None) and a decimal comma, as
Swedish spreadsheets write them. The statistics become a table and statistik.csv; with a
grouping column, the means per group also become a vega_lite bar chart.
"""
import os

import pandas as pd
from skriptoteket_toolkit import list_input_files, read_inputs
from tool_errors import ToolUserError


def load(path):
    df = pd.read_csv(path, sep=None, engine="python", encoding="utf-8-sig")
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            converted = pd.to_numeric(df[col].astype(str).str.replace(",", ".", regex=False), errors="coerce")
            if converted.notna().all():
                df[col] = converted
    return df


def run_tool(input_dir, output_dir):
    files = list_input_files()
    if not files:
        raise ToolUserError("Ladda upp en CSV-fil.")
    df = load(files[0]["path"])
    numeric = df.select_dtypes("number")
    if numeric.empty:
        raise ToolUserError(f"{files[0]['name']} har inga sifferkolumner.")
    by = read_inputs().get("gruppera")
    if by and by not in df.columns:
        raise ToolUserError(f"Kolumnen {by!r} finns inte. Kolumner: {', '.join(map(str, df.columns))}.")

    stats = numeric.agg(["count", "mean", "median", "min", "max"]).T.round(3)
    stats.index.name = "kolumn"
    stats.to_csv(os.path.join(output_dir, "statistik.csv"))
    rows = [{"kolumn": col, **{k: float(v) for k, v in r.items()}} for col, r in stats.iterrows()]
    outputs = [
        {"kind": "notice", "level": "info", "message": f"{files[0]['name']}: {len(df)} rader, {len(numeric.columns)} sifferkolumner."},
        {"kind": "table", "title": "Statistik",
         "columns": [{"key": "kolumn", "label": "Kolumn"}, {"key": "count", "label": "Antal"},
                     {"key": "mean", "label": "Medel"}, {"key": "median", "label": "Median"},
                     {"key": "min", "label": "Min"}, {"key": "max", "label": "Max"}],
         "rows": rows},
    ]

    values = [c for c in numeric.columns if c != by]
    if by and values:
        means = df.groupby(by)[values].mean().round(3).reset_index()
        records = [{k: (v if isinstance(v, str) else float(v)) for k, v in r.items()} for r in means.to_dict("records")]
        outputs.append({"kind": "table", "title": f"Medelvärden per {by}",
                        "columns": [{"key": c, "label": c} for c in means.columns], "rows": records})
        first = values[0]
        outputs.append({"kind": "vega_lite", "spec": {
            "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "title": f"Medel av {first} per {by}",
            "data": {"values": records},
            "mark": "bar",
            "encoding": {"x": {"field": by, "type": "nominal"}, "y": {"field": first, "type": "quantitative"}},
        }})
    return {"outputs": outputs, "next_actions": [], "state": None}
