"""The original hub's PDF helper: HTML in, a PDF artifact out (docs/spec.md §5b).

Tools written for the original hub import it unchanged::

    from pdf_helper import save_as_pdf

    def run_tool(input_dir, output_dir):
        path = save_as_pdf("<h1>Rapport</h1>", output_dir, "rapport.pdf")
        ...

The PDF is rendered with WeasyPrint. Relative URLs in the HTML (stylesheets, images)
resolve against /work/, so "input/style.css" is an uploaded file. Every failure raises
ToolUserError with a sentence the user can act on; the details go to stderr.
"""

import errno
import os
import stat
import sys
import traceback

from tool_errors import ToolUserError

__all__ = ["save_as_pdf"]

BASE_URL = "/work/"


def _show(name):
    """name as a message quotes it: long names are cut, so the message stays readable."""
    return name if len(name) <= 120 else name[:117] + "..."


def _relative_parts(filename):
    """Return filename's path segments under the output directory, or raise ToolUserError
    when it is not a relative path to a .pdf file without "." or ".." segments."""
    try:
        name = os.fspath(filename)
    except TypeError:
        name = None
    if not isinstance(name, str):
        raise ToolUserError('Cannot save the PDF: its file name must be text, like "report.pdf".')
    name = name.strip()
    if "\x00" in name:
        raise ToolUserError("Cannot save the PDF: its file name contains a NUL character.")
    # Backslashes separate folders too, for tools written on Windows (as in the original).
    name = name.replace("\\", "/")
    if name.startswith("/"):
        raise ToolUserError(
            'Cannot save the PDF as "%s": give a file name relative to the output folder, like "report.pdf".' % _show(name))
    parts = [p for p in name.split("/") if p != ""]
    if any(p in (".", "..") for p in parts):
        raise ToolUserError(
            'Cannot save the PDF as "%s": the file name may not contain "." or ".." as a folder.' % _show(name))
    last = name.rsplit("/", 1)[-1]  # empty when name ends in a folder
    if len(last) <= len(".pdf") or not last.lower().endswith(".pdf"):
        raise ToolUserError('Cannot save the PDF as "%s": the file name must end in .pdf, like "report.pdf".' % _show(name))
    return parts


def _target(output_dir, parts):
    """Return the absolute path of parts under output_dir, making the folders it needs,
    or raise ToolUserError when it would leave output_dir (through a symlink)."""
    try:
        root = os.path.abspath(os.fspath(output_dir))
    except TypeError:
        raise ToolUserError("Cannot save the PDF: the output folder must be a path, like the output_dir run_tool gets.") from None
    if not isinstance(root, str):
        raise ToolUserError("Cannot save the PDF: the output folder must be a path, like the output_dir run_tool gets.")
    path = os.path.join(root, *parts)
    try:
        real_root, real = os.path.realpath(root), os.path.realpath(path)
    except (OSError, ValueError):  # ValueError: a NUL in output_dir
        raise ToolUserError("Cannot save the PDF: the output folder is not a usable path.") from None
    if os.path.commonpath([real_root, real]) != real_root or real == real_root:
        raise ToolUserError('Cannot save the PDF as "%s": it must stay inside the output folder.' % _show("/".join(parts)))
    shown = _show("/".join(parts))
    too_long = 'Cannot save the PDF as "%s": the file name is too long; use a shorter one.' % shown
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise ToolUserError(too_long) from None
        raise ToolUserError('Cannot save the PDF: the folder for "%s" could not be created (%s).' % (
            shown, e.strerror or type(e).__name__)) from None
    # Before rendering: a name the file system refuses, or a folder already there.
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise ToolUserError(too_long) from None
        mode = 0
    if stat.S_ISDIR(mode):
        raise ToolUserError('Cannot save the PDF as "%s": output/%s is a folder; choose another file name.' % (shown, shown))
    return path


def _log_failure(what):
    try:
        sys.stderr.write("pdf_helper: %s\n" % what)
        traceback.print_exc(file=sys.stderr)
    except Exception:
        pass


def save_as_pdf(html, output_dir, filename):
    """Render the HTML string html to a PDF at output_dir/filename and return its absolute
    path. filename is relative to output_dir and ends in .pdf (any case); folders in it are
    created. Raises ToolUserError when the name is refused, WeasyPrint is missing, or the
    rendering fails."""
    parts = _relative_parts(filename)
    if isinstance(html, (bytes, bytearray)):
        html = bytes(html)
    elif not isinstance(html, str):
        raise ToolUserError("Cannot make the PDF: save_as_pdf needs the HTML as a string, not %s." % type(html).__name__)
    try:
        from weasyprint import HTML  # only tools that make PDFs pay for the import
    except Exception:
        _log_failure("importing WeasyPrint failed")
        raise ToolUserError(
            "Cannot make the PDF: WeasyPrint is not installed in this runner; ask the administrator to install it.") from None
    path = _target(output_dir, parts)
    existed = os.path.lexists(path)
    try:
        HTML(string=html, base_url=BASE_URL).write_pdf(target=path)
    except Exception as e:
        _log_failure("rendering %s failed" % path)
        if not existed:
            try:
                os.remove(path)
            except OSError:
                pass
        raise ToolUserError(
            'Rendering the PDF "%s" failed (%s): check that the HTML and CSS are valid.' % (
                _show("/".join(parts)), type(e).__name__)) from None
    return path
