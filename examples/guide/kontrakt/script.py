"""Kontrakt: the runner contract, read with nothing but the standard library.

Everything a tool gets is in /work and in a few environment variables. This tool reads
them directly, shows them, and saves them as output/kontrakt.json. A real tool would use
the helper modules instead (skriptoteket_toolkit or skrip_toolkit), which never fail on a
missing or malformed value.
"""
import json
import os
import socket
import sys

CONTRACT = [
    "SKRIPTOTEKET_INPUT_DIR",
    "SKRIPTOTEKET_OUTPUT_DIR",
    "SKRIPTOTEKET_RESULT_PATH",
    "SKRIPTOTEKET_SCRIPT_PATH",
    "SKRIPTOTEKET_ENTRYPOINT",
    "SKRIPTOTEKET_MEMORY_PATH",
    "SKRIPTOTEKET_INPUTS",
    "SKRIPTOTEKET_INPUT_MANIFEST",
    "SKRIPTOTEKET_ACTION",
    "HOME",
]


def can_write(directory):
    try:
        with open(os.path.join(directory, ".prov"), "w") as f:
            f.write("x")
        os.remove(os.path.join(directory, ".prov"))
        return True
    except OSError:
        return False


def network_open():
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=3).close()
        return True
    except OSError:
        return False


def run_tool(input_dir, output_dir):
    env = {name: os.environ.get(name) for name in CONTRACT}
    manifest = json.loads(env["SKRIPTOTEKET_INPUT_MANIFEST"] or '{"files": []}')
    memory = {}
    if os.path.exists(env["SKRIPTOTEKET_MEMORY_PATH"] or ""):
        with open(env["SKRIPTOTEKET_MEMORY_PATH"], encoding="utf-8") as f:
            memory = json.load(f)
    facts = {
        "input_dir": input_dir,
        "output_dir": output_dir,
        "cwd": os.getcwd(),
        "python": "%d.%d" % sys.version_info[:2],
        "in_input_dir": sorted(os.listdir(input_dir)),
        "script_bytes": os.path.getsize(env["SKRIPTOTEKET_SCRIPT_PATH"]),
        "input_dir_writable": can_write(input_dir),
        "output_dir_writable": can_write(output_dir),
        "tmp_writable": can_write("/tmp"),
        "network": network_open(),
        "memory": memory,
        "env": env,
    }
    with open(os.path.join(output_dir, "kontrakt.json"), "w", encoding="utf-8") as f:
        json.dump(facts, f, ensure_ascii=False, indent=2)
    rows = [{"name": e["name"], "path": e["path"], "bytes": e["bytes"]} for e in manifest["files"]]
    return {
        "outputs": [
            {"kind": "json", "title": "Körmiljön", "value": facts},
            {
                "kind": "table",
                "title": "Filer i manifestet",
                "columns": [
                    {"key": "name", "label": "Namn"},
                    {"key": "path", "label": "Sökväg"},
                    {"key": "bytes", "label": "Byte"},
                ],
                "rows": rows,
            },
        ],
        "next_actions": [],
        "state": None,
    }
