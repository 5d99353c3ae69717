"""skrip's warm start: a Python interpreter parked ahead of one run (docs/runner-contract.md).

The runner starts, in a sandbox made for one run that has not come yet,

    python3 -s -B /skrip/skrip_warm.py [--ready-fd N] [--env-nul] MODULE...

with the environment every run shares and nothing of any run's. It imports the MODULEs
(the heavy ones the tools people run import: pandas, weasyprint, docx, ...), tells the
runner it is ready by writing one byte to descriptor N and closing it, and waits. When a
run takes the sandbox, the runner has written its files into /work and sends on stdin one
JSON object, {"env": {...}}, then closes stdin. The interpreter then

- replaces its whole environment with the run's (what a cold start is given by bwrap or
  the container), so a process the tool starts sees exactly that too;
- gives stdin /dev/null, as a cold start has;
- runs the shim as __main__ with the shim's own argv, as `python3 -s -B skrip_shim.py`.

With --env-nul (the Docker runner, whose supervisor sources the run's environment as a
cold start does and hands it over with `env -0`), stdin holds NAME=VALUE entries each
ended by a NUL byte instead of the JSON object.

Nothing imported here has seen the run's environment, inputs, settings or action: they
did not exist in the sandbox yet. The interpreter serves that one run and ends with it.
Empty stdin (the runner gave the sandbox up) ends it quietly.
"""

import os
import sys

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "skrip_shim.py")


def _preload(names):
    for name in names:
        try:
            __import__(name)
        except BaseException:
            # The tool's own import fails the same way, as in a cold start.
            pass


# What a module's first use costs beyond its import (lazy submodules, fontconfig, a
# default template, the user-agent stylesheet), paid ahead with nothing of any run: no
# file is written, and what they print goes nowhere.
_EXERCISE = {
    "pandas": "pandas.DataFrame({'a': [1]}).to_html(); pandas.DataFrame({'a': [1]}).to_csv()",
    "weasyprint": "weasyprint.HTML(string='<h1>x</h1><p>x</p>').write_pdf()",
    "docx": "import io; docx.Document().save(io.BytesIO())",
    "openpyxl": "import io; openpyxl.Workbook().save(io.BytesIO())",
    "jinja2": "jinja2.Template('{{ x }}').render(x=1)",
    "markdown": "markdown.markdown('# x')",
}


def _exercise(names):
    todo = [(n, _EXERCISE[n]) for n in names if n in _EXERCISE and n in sys.modules]
    if not todo:
        return
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        for name, code in todo:
            try:
                exec(code, {name: sys.modules[name]})
            except BaseException:
                pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [devnull]:
            os.close(fd)


def _read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def main(argv):
    ready = -1
    env_nul = False
    while argv and argv[0] in ("--ready-fd", "--env-nul"):
        if argv[0] == "--env-nul":
            env_nul = True
            argv = argv[1:]
        elif len(argv) >= 2:
            ready = int(argv[1])
            argv = argv[2:]
        else:
            break
    with open(SHIM, "rb") as f:
        code = compile(f.read(), SHIM, "exec")
    _preload(argv)
    _exercise(argv)
    import gc
    import json

    # What was imported ahead lives until the end: the collector need not walk it again,
    # in the run or as the interpreter ends.
    gc.collect()
    gc.freeze()

    if ready >= 0:
        try:
            os.write(ready, b"1")
        finally:
            os.close(ready)

    message = _read_all(0)
    if not message:
        return 0
    if env_nul:
        env = {}
        for entry in message.split(b"\0"):
            name, sep, value = entry.partition(b"=")
            if sep:
                env[os.fsdecode(name)] = os.fsdecode(value)
    else:
        env = json.loads(message.decode("utf-8"))["env"]

    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.environ.clear()
    os.environ.update(env)

    import types

    module = types.ModuleType("__main__")
    module.__file__ = SHIM
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    sys.argv[:] = [SHIM]
    exec(code, module.__dict__)  # the shim ends with sys.exit(main())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
