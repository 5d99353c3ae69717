"""The error a tool raises to stop with a message for its user (docs/spec.md §5b).

This is the original hub's ``tool_errors`` module, so tools written for it import it
unchanged::

    from tool_errors import ToolUserError

    def run_tool(input_dir, output_dir):
        raise ToolUserError("Filtypen stöds inte.")

``skrip_toolkit.ToolUserError`` is this very class: raising either fails the run with the
message as its error_summary and no traceback.
"""

__all__ = ["ToolUserError", "GENERIC_MESSAGE"]

# The error_summary of a ToolUserError raised without a message, or with only spaces: the
# original hub's words.
GENERIC_MESSAGE = "Ett fel inträffade."


def user_message(message):
    """Return what the user sees for message: it stripped, or GENERIC_MESSAGE when that
    leaves nothing. Anything but a str is turned into one first (None counts as empty)."""
    if message is None:
        return GENERIC_MESSAGE
    if not isinstance(message, str):
        try:
            message = str(message)
        except Exception:
            return GENERIC_MESSAGE
    return message.strip() or GENERIC_MESSAGE


class ToolUserError(Exception):
    """An error meant for the user.

    Raise it from run_tool (or code it calls): the run fails and the message, stripped,
    becomes the run's error_summary, with no traceback. The message must make sense to the
    user: no stack traces, paths or secrets. ``safe_message`` holds it, as in the original.

    skrip's own addition: ``field="<name>"`` says the user's input in that field of the
    tool's input schema (or of the action's form) is what the tool refuses, and the
    message what to change in it. The run then fails as the user's input's fault
    (error_source "input"), and the page names the field, offers to change it and run
    again, and offers no "Försök igen": the same input gets the same answer.
    """

    def __init__(self, message="", field=None):
        self.safe_message = user_message(message)
        self.field = field.strip() if isinstance(field, str) and field.strip() else None
        super().__init__(self.safe_message)
