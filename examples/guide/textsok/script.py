"""Sök i texter: files kept across steps, and an action form with prefill and state.

The files uploaded with the first run stay with the session: every action run sees them
again in /work/input, beside action.json, which is not one of the user's files. A new run
without files gets them too.
"""
import re
from collections import Counter

from skriptoteket_toolkit import get_action_parts, list_input_files
from tool_errors import ToolUserError

WORD = re.compile(r"\w+")


def user_files():
    """The user's files: the manifest without action.json."""
    return [f for f in list_input_files() if f["name"] != "action.json"]


def read(f):
    with open(f["path"], encoding="utf-8", errors="replace") as fh:
        return fh.read()


def search_action(word):
    return {
        "action_id": "sok",
        "label": "Sök",
        "kind": "form",
        "fields": [{"name": "ord", "label": "Ord", "kind": "string"}],
        "prefill": {"ord": word},
    }


def overview(files):
    counts = Counter(w.lower() for f in files for w in WORD.findall(read(f)))
    common = counts.most_common(5)
    return {
        "outputs": [
            {"kind": "notice", "level": "info",
             "message": f"{len(files)} text(er), {sum(counts.values())} ord: {', '.join(f['name'] for f in files)}."},
            {"kind": "table", "title": "Vanligaste orden",
             "columns": [{"key": "ord", "label": "Ord"}, {"key": "antal", "label": "Antal"}],
             "rows": [{"ord": w, "antal": n} for w, n in common]},
        ],
        "next_actions": [search_action(common[0][0] if common else "")],
        "state": {"sokningar": []},
    }


def search(files, word, state):
    if not word:
        raise ToolUserError("Skriv ett ord att söka efter.")
    pattern = re.compile(r"\b" + re.escape(word), re.IGNORECASE)
    rows = []
    for f in files:
        for no, line in enumerate(read(f).splitlines(), 1):
            if pattern.search(line):
                rows.append({"fil": f["name"], "rad": no, "text": line.strip()})
    history = state.get("sokningar", []) + [word]
    return {
        "outputs": [
            {"kind": "notice", "level": "info", "message": f"{word!r} finns på {len(rows)} rad(er)."},
            {"kind": "table", "title": f"Träffar för {word}",
             "columns": [{"key": "fil", "label": "Fil"}, {"key": "rad", "label": "Rad"}, {"key": "text", "label": "Text"}],
             "rows": rows},
            {"kind": "markdown", "markdown": "Dina sökningar: " + ", ".join(history)},
        ],
        "next_actions": [search_action(word)],
        "state": {"sokningar": history},
    }


def run_tool(input_dir, output_dir):
    action_id, action_input, state = get_action_parts()
    files = user_files()
    if not files:
        raise ToolUserError("Ladda upp minst en text (.txt eller .md).")
    if action_id == "sok":
        return search(files, (action_input.get("ord") or "").strip(), state)
    return overview(files)
