"""Klasslista: a tool written for the original hub, against its documented API only.

It knows nothing of skrip. The first run reads an uploaded CSV of pupils, the form's
"klass" and the user's saved settings, and offers "Skapa PDF"; the action run renders the
list with pdf_helper into rapporter/<klass>.pdf. Without a CSV it stops with a
ToolUserError.
"""

import csv
from pathlib import Path

from pdf_helper import save_as_pdf
from skriptoteket_toolkit import (
    get_action_parts,
    list_input_files,
    read_action,
    read_input_manifest,
    read_inputs,
    read_memory,
    read_settings,
)
from tool_errors import ToolUserError


def run_tool(input_dir: str, output_dir: str) -> dict:
    action_id, action_input, state = get_action_parts()
    settings = read_settings()
    skola = settings.get("skola", "Skolan")

    if action_id == "skapa_pdf":
        klass = str(action_input.get("klass") or state.get("klass") or "klass")
        rows = "".join(f"<tr><td>{n}</td></tr>" for n in state.get("namn", []))
        html = (
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            "<link rel='stylesheet' href='input/stil.css'></head>"
            f"<body><h1>{skola}: {klass}</h1><table>{rows}</table></body></html>"
        )
        pdf_path = save_as_pdf(html, output_dir, f"rapporter/{klass}.pdf")
        return {
            "outputs": [
                {"kind": "notice", "level": "info", "message": "PDF skapad!"},
                {"kind": "markdown", "markdown": f"Ladda ner **{Path(pdf_path).name}** ovan."},
            ],
            "next_actions": [],
            "state": None,
        }

    inputs = read_inputs()
    files = [Path(f["path"]) for f in list_input_files() if f["name"].endswith(".csv")]
    if not files:
        raise ToolUserError("Ingen CSV-fil uppladdad.")

    with files[0].open(encoding="utf-8-sig") as f:
        names = [row["namn"] for row in csv.DictReader(f)]
    klass = inputs.get("klass", "7B")
    return {
        "outputs": [
            {
                "kind": "table",
                "title": f"{skola}, {klass}",
                "columns": [{"key": "namn", "label": "Namn"}],
                "rows": [{"namn": n} for n in names],
            },
            {
                "kind": "json",
                "title": "Diagnostik",
                "value": {
                    "manifest": sorted(f["name"] for f in read_input_manifest()["files"]),
                    "memory": read_memory(),
                    "action": read_action(),
                },
            },
        ],
        "next_actions": [
            {
                "action_id": "skapa_pdf",
                "label": "Skapa PDF",
                "kind": "form",
                "fields": [{"name": "klass", "kind": "string", "label": "Klass"}],
                "prefill": {"klass": klass},
            }
        ],
        "state": {"klass": klass, "namn": names},
    }
