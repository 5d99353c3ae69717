"""Anteckningar om filer: a tour of skrip_toolkit, skrip's own helper module.

skrip_toolkit gives ToolUserError, inputs(), manifest(), input_files(), action() and
state(). The first run lists the files and offers a form, "anteckna"; each submission
adds a note to the session state and offers the form again, prefilled.
"""
import skrip_toolkit as tk


def note_action(rubrik, count):
    return {
        "action_id": "anteckna",
        "label": "Spara anteckning",
        "kind": "form",
        "fields": [{"name": "anteckning", "label": "Anteckning", "kind": "text"}],
        "prefill": {"anteckning": f"{rubrik}, anteckning {count + 1}: "},
    }


def file_table(files):
    return {
        "kind": "table",
        "title": "Dina filer",
        "columns": [{"key": "name", "label": "Fil"}, {"key": "bytes", "label": "Byte"}],
        "rows": [{"name": f["name"], "bytes": f["bytes"]} for f in files],
    }


def first_run():
    rubrik = tk.inputs().get("rubrik")
    if not rubrik:
        raise tk.ToolUserError("Skriv en rubrik.")
    files = tk.input_files()
    return {
        "outputs": [
            {"kind": "markdown", "markdown": f"## {rubrik}\n\n{len(files)} fil(er) uppladdade."},
            file_table(files),
        ],
        "next_actions": [note_action(rubrik, 0)],
        "state": {"rubrik": rubrik, "anteckningar": []},
    }


def add_note(action):
    state = tk.state() or {}
    rubrik = state.get("rubrik", "")
    notes = list(state.get("anteckningar", []))
    note = (action["input"].get("anteckning") or "").strip()
    if not note:
        raise tk.ToolUserError("Anteckningen är tom.")
    notes.append(note)
    in_manifest = [f["name"] for f in tk.manifest()["files"]]  # never action.json
    return {
        "outputs": [
            {"kind": "markdown", "markdown": f"## {rubrik}\n\n" + "\n".join(f"- {n}" for n in notes)},
            file_table(tk.input_files()),  # the same files as the first run: action.json left out
            {"kind": "json", "title": "Hela manifestet", "value": in_manifest},
        ],
        "next_actions": [note_action(rubrik, len(notes))],
        "state": {"rubrik": rubrik, "anteckningar": notes},
    }


def run_tool(input_dir, output_dir):
    action = tk.action()
    if action is None:
        return first_run()
    if action["action_id"] == "anteckna":
        return add_note(action)
    raise tk.ToolUserError(f"Okänd åtgärd: {action['action_id']}")
