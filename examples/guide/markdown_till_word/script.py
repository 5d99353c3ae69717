"""Markdown till Word: pandoc converts, python-docx finishes the document.

pypandoc runs the pandoc program to turn markdown into .docx; python-docx then opens the
result to set its author and title and to add a page header from the user's settings.
"""
import os

import pypandoc
from docx import Document
from skriptoteket_toolkit import list_input_files, read_inputs, read_settings
from tool_errors import ToolUserError


def run_tool(input_dir, output_dir):
    inputs = read_inputs()
    files = list_input_files()
    if files:
        with open(files[0]["path"], encoding="utf-8-sig") as f:
            markdown = f.read()
        stem = os.path.splitext(files[0]["name"])[0]
    else:
        markdown = inputs.get("markdown", "")
        stem = "dokument"
    if not markdown.strip():
        raise ToolUserError("Ladda upp en markdown-fil eller skriv markdown i textrutan.")

    path = os.path.join(output_dir, stem + ".docx")
    pypandoc.convert_text(markdown, "docx", format="markdown", outputfile=path)

    settings = read_settings()
    doc = Document(path)
    doc.core_properties.title = inputs.get("titel", stem)
    doc.core_properties.author = settings.get("forfattare", "")
    if settings.get("sidhuvud"):
        doc.sections[0].header.paragraphs[0].text = settings["sidhuvud"]
    doc.save(path)

    headings = [p.text for p in doc.paragraphs if p.style.name.startswith("Heading")]
    return {
        "outputs": [
            {"kind": "notice", "level": "info", "message": f"Klart: {stem}.docx, {len(doc.paragraphs)} stycken."},
            {"kind": "table", "title": "Rubriker",
             "columns": [{"key": "rubrik", "label": "Rubrik"}], "rows": [{"rubrik": h} for h in headings]},
        ],
        "next_actions": [],
        "state": None,
    }
