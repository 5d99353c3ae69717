"""Write a markdown report about the uploaded files, shown and saved as output/report.md."""
import hashlib
import os

import skrip_toolkit as tk
from skrip_toolkit import ToolUserError


def describe(path):
    h = hashlib.sha256()
    lines = 0
    text = True
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
            lines += chunk.count(b"\n")
            if b"\0" in chunk:
                text = False
    return h.hexdigest(), (lines if text else None)


def run_tool(input_dir, output_dir):
    files = tk.input_files()
    if not files:
        raise ToolUserError("Ladda upp en eller flera filer att skriva en rapport om.")
    title = tk.inputs().get("title") or "Filrapport"
    md = [f"# {title}", "", f"{len(files)} {'fil' if len(files) == 1 else 'filer'}, {sum(f['bytes'] for f in files)} byte totalt.", "",
          "| Fil | Byte | Rader | SHA-256 |", "|---|---:|---:|---|"]
    for f in files:
        digest, lines = describe(f["path"])
        md.append(f"| {f['name']} | {f['bytes']} | {lines if lines is not None else 'binär'} | `{digest[:16]}…` |")
    md.append("")
    report = "\n".join(md)
    with open(os.path.join(output_dir, "report.md"), "w", encoding="utf-8") as out:
        out.write(report)
    return {"outputs": [{"kind": "markdown", "markdown": report},
                        {"kind": "notice", "level": "info", "message": "Rapporten sparas som report.md: ladda ner den med knappen överst i resultatet."}]}
