"""Hej: the smallest tool.

run_tool returns a str, which becomes one html_sandboxed output. The form field "namn"
comes from the tool's input_schema; the server has already trimmed it, and leaves it out
when it was empty.
"""
import html

from skriptoteket_toolkit import read_inputs


def run_tool(input_dir, output_dir):
    namn = read_inputs().get("namn", "världen")
    return f"<p>Hej {html.escape(namn)}!</p>"
