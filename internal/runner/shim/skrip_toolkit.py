"""Helpers for skrip tools.

A tool script imports this module to read what the run was given and to fail with a
message the user sees::

    import skrip_toolkit as tk

    def run_tool(input_dir, output_dir):
        if not tk.input_files():
            raise tk.ToolUserError("Ladda upp minst en HTML-fil.")
        ...

Everything here reads the SKRIPTOTEKET_* environment the runner sets (docs/spec.md §5).
"""

import json
import os

# ToolUserError is defined once, in tool_errors (the original hub's module): raising
# either name fails the run the same way.
from tool_errors import ToolUserError

__all__ = ["ToolUserError", "manifest", "input_files", "inputs", "action", "state"]

ACTION_FILE = "action.json"


def _env_json(name, default):
    raw = os.environ.get(name)
    if not raw:
        return default
    return json.loads(raw)


def manifest():
    """Return the input manifest: {"files": [{"name", "path", "bytes"}, ...]}.

    It lists every file in the input directory but action.json (see action()).
    """
    return _env_json("SKRIPTOTEKET_INPUT_MANIFEST", {"files": []})


def input_files():
    """Return the manifest's files: the user's files (never action.json).

    Each entry is a dict with "name", "path" (an absolute path) and "bytes".
    """
    return [f for f in manifest().get("files", []) if f.get("name") != ACTION_FILE]


def inputs():
    """Return the initial form values as a dict ({} when there are none)."""
    return _env_json("SKRIPTOTEKET_INPUTS", {})


def action():
    """Return the action of an action run, or None on an initial run.

    The action is a dict {"action_id", "input", "state"}, the same as action.json:
    "input" holds the submitted form values and "state" the session state.
    """
    return _env_json("SKRIPTOTEKET_ACTION", None)


def state():
    """Return the session state on an action run (a dict), or None on an initial run."""
    a = action()
    if a is None:
        return None
    return a.get("state")
