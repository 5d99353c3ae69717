"""The original hub's PDF helper: HTML in, a PDF artifact out (docs/spec.md §5b).

Tools written for the original hub import it unchanged::

    from pdf_helper import save_as_pdf

    def run_tool(input_dir, output_dir):
        path = save_as_pdf("<h1>Rapport</h1>", output_dir, "rapport.pdf")
        ...

The PDF is rendered with WeasyPrint. Relative URLs in the HTML (stylesheets, images)
resolve against /work/, so "input/style.css" is an uploaded file. Every failure raises
ToolUserError with the original hub's sentence (in Swedish); the details go to stderr.
"""

import os
import sys
import traceback

from tool_errors import ToolUserError

__all__ = ["save_as_pdf"]

BASE_URL = "/work/"

# The original hub's messages, word for word: a tool's users see the same sentences there
# and here. What went wrong in detail goes to stderr, for the tool's author.
BAD_SUFFIX = "Ogiltigt filnamn. Filnamnet måste sluta med .pdf."
BAD_CHARS = "Ogiltigt filnamn. Filnamnet innehåller ogiltiga tecken."
NOT_RELATIVE = "Ogiltigt filnamn. Filnamnet måste vara relativt under output."
DOT_SEGMENT = "Ogiltigt filnamn. Filnamnet får inte innehålla '..' eller '.'."
OUTSIDE = "Ogiltigt filnamn. PDF måste sparas under output-katalogen."
NO_OUTPUT_DIR = "Kunde inte skapa output-katalogen för PDF."
NO_SUBFOLDER = "Kunde inte skapa undermappar för PDF-utdata."
RENDER_FAILED = ("PDF-rendering misslyckades. Kontrollera att HTML/CSS är giltig och "
                 "att filnamnet slutar med .pdf.")


def _log_failure(what):
    try:
        sys.stderr.write("pdf_helper: %s\n" % what)
        traceback.print_exc(file=sys.stderr)
    except Exception:
        pass


def _relative_parts(filename):
    """Return filename's path segments under the output directory, read as the original
    reads it (a POSIX path: "." segments and repeated slashes fall away, backslashes
    separate folders), or raise ToolUserError when it is not a relative path to a .pdf
    file without ".." segments."""
    try:
        name = os.fspath(filename)
    except TypeError:
        name = None
    if not isinstance(name, str):
        _log_failure("the file name is %s, not a str" % type(filename).__name__)
        raise ToolUserError(BAD_SUFFIX)
    name = name.strip()
    if not name:
        raise ToolUserError(BAD_SUFFIX)
    if "\x00" in name:
        raise ToolUserError(BAD_CHARS)
    name = name.replace("\\", "/")
    if name.startswith("/"):
        raise ToolUserError(NOT_RELATIVE)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ToolUserError(DOT_SEGMENT)
    last = parts[-1] if parts else ""
    # The suffix as pathlib sees it: ".pdf" alone is a hidden file without one.
    if len(last) <= len(".pdf") or not last.lower().endswith(".pdf"):
        raise ToolUserError(BAD_SUFFIX)
    return parts


def _target(output_dir, parts):
    """Return the absolute path of parts under output_dir, making the folders it needs,
    or raise ToolUserError when it would leave output_dir (through a symlink)."""
    try:
        root = os.path.abspath(os.fspath(output_dir))
        os.makedirs(root, exist_ok=True)
    except Exception:
        _log_failure("making the output folder %r failed" % (output_dir,))
        raise ToolUserError(NO_OUTPUT_DIR) from None
    path = os.path.join(root, *parts)
    try:
        real_root, real = os.path.realpath(root), os.path.realpath(path)
    except (OSError, ValueError):
        _log_failure("resolving %r failed" % path)
        raise ToolUserError(OUTSIDE) from None
    if os.path.commonpath([real_root, real]) != real_root:
        raise ToolUserError(OUTSIDE)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError:
        _log_failure("making the folder of %r failed" % path)
        raise ToolUserError(NO_SUBFOLDER) from None
    return path


def save_as_pdf(html, output_dir, filename):
    """Render the HTML string html to a PDF at output_dir/filename and return its absolute
    path. filename is relative to output_dir and ends in .pdf (any case); folders in it are
    created. Raises ToolUserError, with the original hub's message, when the name is
    refused or the rendering fails (WeasyPrint missing included)."""
    parts = _relative_parts(filename)
    path = _target(output_dir, parts)
    existed = os.path.lexists(path)
    try:
        from weasyprint import HTML  # only tools that make PDFs pay for the import

        HTML(string=html, base_url=BASE_URL).write_pdf(target=path)
    except Exception:
        _log_failure("rendering %s failed" % path)
        if not existed:
            try:
                os.remove(path)
            except OSError:
                pass
        raise ToolUserError(RENDER_FAILED) from None
    return path
