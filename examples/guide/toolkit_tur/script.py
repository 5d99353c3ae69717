"""Formulär, inställningar och steg: every function of skriptoteket_toolkit.

The original hub's helper module reads the runner's environment and never raises: each
function answers with a safe default ({}, [] or None) when a value is missing or
malformed. This tool calls all seven and shows what they returned, then offers a form,
"steg", that counts steps in the session state.
"""
from skriptoteket_toolkit import (
    get_action_parts,
    list_input_files,
    read_action,
    read_input_manifest,
    read_inputs,
    read_memory,
    read_settings,
)


def step_action(step):
    return {
        "action_id": "steg",
        "label": "Nästa steg",
        "kind": "form",
        "fields": [{"name": "anteckning", "label": "Anteckning (valfri)", "kind": "string"}],
        "prefill": {"anteckning": f"Steg {step + 1}"},
    }


def run_tool(input_dir: str, output_dir: str) -> dict:
    action_id, action_input, state = get_action_parts()
    step = state.get("steg", 0) if isinstance(state.get("steg"), int) else 0
    if action_id == "steg":
        step += 1

    settings = read_settings()
    seen = {
        "read_inputs": read_inputs(),
        "read_settings": settings,
        "read_memory": read_memory(),
        "read_input_manifest": read_input_manifest(),
        "list_input_files": list_input_files(),
        "read_action": read_action(),
        "get_action_parts": [action_id, action_input, state],
    }
    signatur = settings.get("signatur", "(ingen signatur)")
    return {
        "outputs": [
            {"kind": "notice", "level": "info", "message": f"Steg {step}. Hälsningar, {signatur}."},
            {"kind": "json", "title": "skriptoteket_toolkit", "value": seen},
        ],
        "next_actions": [step_action(step)],
        "state": {"steg": step},
    }
