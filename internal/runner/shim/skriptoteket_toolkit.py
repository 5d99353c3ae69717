"""The original hub's helpers for reading what a run was given (docs/spec.md §5b).

Tools written for the original hub import it unchanged::

    from pathlib import Path
    from skriptoteket_toolkit import get_action_parts, list_input_files, read_inputs, read_settings

    def run_tool(input_dir, output_dir):
        action_id, action_input, state = get_action_parts()
        inputs = action_input if action_id else read_inputs()
        settings = read_settings()
        files = [Path(f["path"]) for f in list_input_files()]
        ...

Every function reads the SKRIPTOTEKET_* environment (or the memory file it names) and
none raises: a value that is missing, not JSON, or not of the expected shape gives the
documented default. The one exception is the original's: read_memory() raises
UnicodeDecodeError on a memory file that is not UTF-8.
"""

import json
import os
from typing import TypedDict, Union

__all__ = [
    "ActionPayload",
    "JsonValue",
    "ManifestFile",
    "get_action_parts",
    "list_input_files",
    "read_action",
    "read_input_manifest",
    "read_inputs",
    "read_memory",
    "read_settings",
]

# Type names the original exports, for tools that annotate with them.
JsonValue = Union[str, int, float, bool, None, dict, list]


class ManifestFile(TypedDict):
    """One file of the input manifest: its name, absolute path and size."""

    name: str
    path: str
    bytes: int


class ActionPayload(TypedDict):
    """An action run's action: the action id, the submitted form values, the state."""

    action_id: str
    input: dict
    state: dict


def _parse(text):
    """Return the JSON value of text, or None when it is blank or not JSON."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        return None


def _env(name):
    return _parse(os.environ.get(name))


def read_inputs():
    """Return the initial form values (SKRIPTOTEKET_INPUTS) as a dict; {} when the variable
    is missing or not a JSON object."""
    value = _env("SKRIPTOTEKET_INPUTS")
    return value if isinstance(value, dict) else {}


def read_input_manifest():
    """Return the input manifest (SKRIPTOTEKET_INPUT_MANIFEST): {"files": [{"name", "path",
    "bytes"}, ...]} for every file in the input directory but action.json (the action is
    in SKRIPTOTEKET_ACTION). {"files": []} when the variable is missing or not a JSON
    object."""
    value = _env("SKRIPTOTEKET_INPUT_MANIFEST")
    return value if isinstance(value, dict) else {"files": []}


def list_input_files():
    """Return the manifest's files: a list of {"name", "path", "bytes"} dicts, keeping only
    the entries whose name and path are strings and whose bytes is an integer. [] when the
    manifest has no list of files."""
    files = read_input_manifest().get("files")
    if not isinstance(files, list):
        return []
    out = []
    for entry in files:
        if not isinstance(entry, dict):
            continue
        name, path, size = entry.get("name"), entry.get("path"), entry.get("bytes")
        if isinstance(name, str) and isinstance(path, str) and isinstance(size, int) and not isinstance(size, bool):
            out.append({"name": name, "path": path, "bytes": size})
    return out


def read_action():
    """Return the action of an action run (SKRIPTOTEKET_ACTION, the same JSON as
    action.json) as {"action_id", "input", "state"}: action_id stripped, input and state {}
    when they are not objects. None on an initial run, or when the variable is not an
    object with a non-empty string action_id."""
    value = _env("SKRIPTOTEKET_ACTION")
    if not isinstance(value, dict):
        return None
    action_id = value.get("action_id")
    if not isinstance(action_id, str) or not action_id.strip():
        return None
    given, state = value.get("input"), value.get("state")
    return {
        "action_id": action_id.strip(),
        "input": given if isinstance(given, dict) else {},
        "state": state if isinstance(state, dict) else {},
    }


def get_action_parts():
    """Return (action_id, input, state) of an action run, or (None, {}, {}) when this is
    not one."""
    action = read_action()
    if action is None:
        return None, {}, {}
    return action["action_id"], action["input"], action["state"]


def read_memory():
    """Return the dict in the file SKRIPTOTEKET_MEMORY_PATH names (/work/memory.json:
    {"settings": {...}}); {} when the variable is unset or the file is missing, unreadable,
    or not a JSON object. A file that is not UTF-8 raises UnicodeDecodeError, as in the
    original."""
    path = os.environ.get("SKRIPTOTEKET_MEMORY_PATH", "").strip()
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return {}
    value = _parse(data.decode("utf-8"))
    return value if isinstance(value, dict) else {}


def read_settings():
    """Return the user's saved settings for this tool (the editor's own in the editor):
    read_memory()["settings"] when it is a dict, else {}."""
    settings = read_memory().get("settings")
    return settings if isinstance(settings, dict) else {}
