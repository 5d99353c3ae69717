"""Fel och meddelanden: the three ways a run can tell the user something went wrong.

- raise ToolUserError("..."): the run fails, and the message is its error_summary;
  nothing else is shown, no traceback.
- return a notice with level "error" (or "warning"): the run succeeds, and can go on to
  show other outputs.
- any other exception: the run fails with "Tool execution failed (TypeName)." and the
  traceback goes to stderr, which only the run's owner sees.
"""
import sys

import skrip_toolkit
import tool_errors
from pdf_helper import save_as_pdf
from skriptoteket_toolkit import read_inputs
from tool_errors import ToolUserError


def run_tool(input_dir, output_dir):
    case = read_inputs().get("fall", "anvandarfel")
    if case == "anvandarfel":
        raise ToolUserError("Filen saknar kolumnen 'namn'. Lägg till den och försök igen.")
    if case == "tomt_fel":
        raise ToolUserError("")
    if case == "notis":
        return {
            "outputs": [
                {"kind": "notice", "level": "error", "message": "Rad 3 saknar ett namn och hoppades över."},
                {"kind": "notice", "level": "warning", "message": "Rad 7 har ett ovanligt datum."},
                {"kind": "markdown", "markdown": "Övriga 40 rader lästes in."},
            ],
            "next_actions": [],
            "state": None,
        }
    if case == "krasch":
        print("om att räkna ut medelvärdet av noll rader", file=sys.stderr)
        return {"outputs": [{"kind": "notice", "level": "info", "message": str(1 / 0)}]}
    if case == "pdf_fel":
        save_as_pdf("<p>hej</p>", output_dir, "../utanfor.pdf")
    if case == "samma_klass":
        same = tool_errors.ToolUserError is skrip_toolkit.ToolUserError
        return {"outputs": [{"kind": "json", "title": "Samma klass", "value": same}]}
    raise ToolUserError(f"Okänt fall: {case}")
