"""skrip's runner shim: runs one tool inside the sandbox and writes result.json (docs/spec.md §5).

The runner mounts this directory read-only at /skrip and starts

    python3 -s -B /skrip/skrip_shim.py

with cwd /work and the SKRIPTOTEKET_* environment. The shim imports the script at
SKRIPTOTEKET_SCRIPT_PATH as the module "script", calls its entrypoint
(SKRIPTOTEKET_ENTRYPOINT, "run_tool") as run_tool(input_dir, output_dir), and writes the
outcome to SKRIPTOTEKET_RESULT_PATH:

- a returned str becomes one html_sandboxed output, and '' none (as in the original hub);
- a returned dict may carry "outputs", "next_actions" and "state" (state is written only
  when the key is present, even when it is None);
- anything else, None included, fails the run as in the original hub: "Tool execution
  failed (TypeError).", with what was returned on stderr;
- ToolUserError (tool_errors.ToolUserError, which skrip_toolkit.ToolUserError is) fails
  the run with its stripped message as error_summary, the original's "Ett fel inträffade."
  when it is empty, and no traceback;
- any other exception fails it with "Tool execution failed (TypeName)." and the
  traceback on stderr; SystemExit and KeyboardInterrupt fail it too.

A failed result says where its error came from in error_source: "tool" for a
ToolUserError (its message is for the tool's user), "input" with error_field for one
raised with field= (the user's input in that field is refused), "crash" for everything
else the shim fails the run for. The server decides by it, never by the summary's words.

Values JSON cannot hold become str (NaN and infinities become null); sets become lists
sorted by their items' JSON, as in the original. If the result still cannot be encoded, a
failed result says so. A failed run lists no artifacts, as in the original. The exit code is 0 whenever result.json was
written (the status lives in it) and 1 only when writing it failed.
"""

# Only modules that Python has loaded before the shim starts, or that cost nothing to
# load: a no-op tool's run is mostly Python's start-up, and json (through re, enum and
# functools), importlib.util, traceback and collections would double what the shim
# itself takes. traceback is imported when a tool fails; result.json is written by
# _dumps below, which gives what json.dumps gives.
import math
import os
import stat
import sys
from _collections_abc import Mapping  # what collections.abc.Mapping is

from _json import encode_basestring as _quote  # what json.dumps uses for str

CONTRACT_VERSION = 2
MAX_DEPTH = 200  # nesting of the result; deeper values fail it as not serialisable
MAX_ARTIFACTS = 10000  # listed in result.json; the runner scans output/ itself anyway
SHIM_DIR = os.path.dirname(os.path.abspath(__file__))

if SHIM_DIR not in sys.path:
    sys.path.insert(0, SHIM_DIR)
# A Python process the tool starts (python3 helper.py) imports the toolkits too.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SHIM_DIR, os.environ.get("PYTHONPATH", "")) if p)

import tool_errors  # noqa: E402  (needs SHIM_DIR on sys.path)


class _Failure(Exception):
    """A failure the shim detects itself; its message is the error_summary."""


def _log(message):
    try:
        sys.stderr.write("skrip shim: " + message + "\n")
    except Exception:
        pass


def _load_entrypoint(script_path, entrypoint):
    # The functions importlib.util re-exports, from the import system Python starts with.
    external = sys.modules["_frozen_importlib_external"]
    loader = external.SourceFileLoader("script", script_path)
    spec = external.spec_from_file_location("script", script_path, loader=loader)
    module = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules["script"] = module
    loader.exec_module(module)
    fn = getattr(module, entrypoint, None)
    if not callable(fn):
        raise _Failure("The script defines no function %s(input_dir, output_dir)." % entrypoint)
    return fn


def _apply(result, returned):
    """Put what run_tool returned into result."""
    if isinstance(returned, str):
        result["outputs"] = [{"kind": "html_sandboxed", "html": returned}] if returned else []
        return
    if isinstance(returned, Mapping):
        outputs = returned.get("outputs")
        next_actions = returned.get("next_actions")
        result["outputs"] = [] if outputs is None else outputs
        result["next_actions"] = [] if next_actions is None else next_actions
        if "state" in returned:
            result["state"] = returned["state"]
        unknown = sorted(repr(k) for k in returned if k not in ("outputs", "next_actions", "state"))
        if unknown:
            _log("ignoring key(s) %s in what run_tool returned" % ", ".join(unknown))
        return
    # A TypeError, as the original's runner raises: the run fails with "Tool execution
    # failed (TypeError)." and this sentence, on stderr, tells the author why.
    raise TypeError("run_tool returned %s; return a str (HTML) or a dict with outputs, next_actions and state"
                    % ("None" if returned is None else type(returned).__name__))


def _user_message(exc):
    """The error_summary of a ToolUserError: its message stripped, or a generic sentence
    (also when a subclass's __str__ fails)."""
    try:
        message = str(exc)
    except Exception:
        message = getattr(exc, "safe_message", None)
    return tool_errors.user_message(message)


def _print_traceback(exc):
    """Print exc's traceback without the shim's and importlib's own frames."""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name != __file__ and not name.startswith("<frozen importlib"):
            break
        tb = tb.tb_next
    try:
        import traceback

        traceback.clear_frames(exc.__traceback__)  # frees the tool's locals (MemoryError)
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException:
        text = "%s (the traceback could not be formatted)\n" % type(exc).__name__
    try:
        sys.stderr.write(text)
    except Exception:
        pass


def _run_tool(result, script_path, entrypoint, input_dir, output_dir):
    """Run the tool, recording its outcome in result."""

    def fail(summary, source="crash", field=None):
        result.update(status="failed", error_summary=summary, error_source=source, outputs=[], next_actions=[])
        if field:
            result["error_field"] = field[:200]
        result.pop("state", None)

    try:
        fn = _load_entrypoint(script_path, entrypoint)
        _apply(result, fn(input_dir, output_dir))
    except _Failure as e:
        fail(str(e))
        _log(str(e))
    except tool_errors.ToolUserError as e:
        field = getattr(e, "field", None)
        if not isinstance(field, str):
            field = None
        fail(_user_message(e), "input" if field else "tool", field)
    except SystemExit as e:
        fail("Tool execution failed (SystemExit): the tool called exit(%r); return from %s instead." % (e.code, entrypoint))
        _print_traceback(e)
    except KeyboardInterrupt as e:
        fail("Tool execution was interrupted (KeyboardInterrupt).")
        _print_traceback(e)
    except BaseException as e:
        fail("Tool execution failed (%s)." % type(e).__name__)
        _print_traceback(e)


def _artifacts(output_dir):
    """List every regular file under output_dir (not symlinks) as "output/<path>"."""
    found = []
    for root, _dirs, files in os.walk(output_dir, followlinks=False):
        for name in files:
            full = os.path.join(root, name)
            try:
                if not stat.S_ISREG(os.lstat(full).st_mode):
                    continue
            except OSError:
                continue
            found.append("output/" + os.path.relpath(full, output_dir).replace(os.sep, "/"))
    found.sort()
    if len(found) > MAX_ARTIFACTS:
        _log("output holds %d files; result.json lists the first %d" % (len(found), MAX_ARTIFACTS))
        del found[MAX_ARTIFACTS:]
    return found


def _key(k):
    """Turn a dict key into a str the way json.dumps does, or with str()."""
    if isinstance(k, str):
        return k
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, float):
        return float.__repr__(k)
    if isinstance(k, int):
        return int.__repr__(k)
    return str(k)


def _jsonable(value, depth, active):
    """Return value with only JSON types in it: other values become str, NaN and the
    infinities None. Raises ValueError on a cycle or nesting deeper than MAX_DEPTH."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, (set, frozenset)):
        return _sorted_set(value, depth, active)
    if not isinstance(value, (Mapping, list, tuple)):
        return str(value)
    if depth >= MAX_DEPTH:
        raise ValueError("nested more than %d levels deep" % MAX_DEPTH)
    if id(value) in active:
        raise ValueError("it contains itself")
    active.add(id(value))
    try:
        if isinstance(value, Mapping):
            return {_key(k): _jsonable(v, depth + 1, active) for k, v in value.items()}
        return [_jsonable(v, depth + 1, active) for v in value]
    finally:
        active.discard(id(value))


def _sorted_set(value, depth, active):
    """A set as a list of its items made JSON-able, sorted by their compact JSON with keys
    sorted, so the same set always gives the same list (as the original does)."""
    if depth >= MAX_DEPTH:
        raise ValueError("nested more than %d levels deep" % MAX_DEPTH)
    import json  # only for tools that return sets

    items = [_jsonable(v, depth + 1, active) for v in value]
    items.sort(key=lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    return items


def _dumps(value, out):
    """Append to out the JSON text of value, which _jsonable returned, as
    json.dumps(value, ensure_ascii=False, allow_nan=False) writes it."""
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for k, v in value.items():
            if not first:
                out.append(", ")
            first = False
            out.append(_quote(k))
            out.append(": ")
            _dumps(v, out)
        out.append("}")
    else:
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(", ")
            _dumps(v, out)
        out.append("]")


def _encode(result):
    out = []
    _dumps(_jsonable(result, 0, set()), out)
    text = "".join(out)
    # Lone surrogates (from undecodable file names) become \udcXX escapes, valid JSON.
    return text.encode("utf-8", "backslashreplace")


def _write(path, data):
    # The runner pre-creates result.json and bind-mounts it writable in a read-only
    # /work: write in place with truncation, never by rename.
    flags = os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        fd = os.open(path, flags | os.O_CREAT, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()


def _flush_std():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


def main():
    env = os.environ
    input_dir = env.get("SKRIPTOTEKET_INPUT_DIR", "/work/input")
    output_dir = env.get("SKRIPTOTEKET_OUTPUT_DIR", "/work/output")
    result_path = env.get("SKRIPTOTEKET_RESULT_PATH", "/work/result.json")
    script_path = env.get("SKRIPTOTEKET_SCRIPT_PATH", "/work/script.py")
    entrypoint = env.get("SKRIPTOTEKET_ENTRYPOINT") or "run_tool"

    result = {
        "contract_version": CONTRACT_VERSION,
        "status": "succeeded",
        "error_summary": None,
        "outputs": [],
        "next_actions": [],
    }
    _run_tool(result, script_path, entrypoint, input_dir, output_dir)
    result["artifacts"] = []
    if result["status"] == "succeeded":  # a failed run keeps none, as in the original
        try:
            result["artifacts"] = _artifacts(output_dir)
        except Exception as e:
            _log("listing %s failed: %s" % (output_dir, e))

    try:
        data = _encode(result)
    except BaseException as e:
        _print_traceback(e)
        reason = "%s: %s" % (type(e).__name__, e)
        if len(reason) > 200:
            reason = reason[:200] + "..."
        data = _encode({
            "contract_version": CONTRACT_VERSION,
            "status": "failed",
            "error_summary": "run_tool's outputs, next_actions or state are not JSON-serialisable (%s)." % reason,
            "error_source": "crash",
            "outputs": [],
            "next_actions": [],
            "artifacts": result["artifacts"],
        })

    code = 0
    _flush_std()
    try:
        _write(result_path, data)
    except BaseException as e:
        _log("writing %s failed: %s" % (result_path, e))
        code = 1
    _flush_std()
    return code


if __name__ == "__main__":
    sys.exit(main())
