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
    import json

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
