"""Run a command and relay its output; while it is silent, say every few seconds that it is
still at work and for how long, so a long install or a first start never looks hung.

    python3 tools/progress.py [--label WORDS] [--every SECONDS] [--until REGEX] -- CMD ARGS...

`--until`: stop the reminders once a line of output matches (a server that has started and
then rightly falls quiet). Exits with the command's status; 0 when Ctrl-C stopped it. Standard
library only: it runs before the virtual environment exists.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="working")
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--until", default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    until = re.compile(args.until) if args.until else None
    started = time.monotonic()
    last = [started]
    done = threading.Event()

    def remind() -> None:
        while not done.wait(1.0):
            now = time.monotonic()
            if now - last[0] >= args.every:
                print(f"  ... still {args.label} ({now - started:.0f} s)", flush=True)
                last[0] = now

    reminder = threading.Thread(target=remind, daemon=True)
    reminder.start()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            last[0] = time.monotonic()
            if until is not None and until.search(line):
                done.set()
        status = process.wait()
        if status == -signal.SIGINT:
            # The interrupt ended the command but was not seen here (a signal can reach the
            # reminder thread while this one waits on the pipe): still a stop on request.
            stopped(args.label, started=until is not None and done.is_set())
            return 0
        return status
    except KeyboardInterrupt:
        # Once --until matched, the command had started: say so, not "still starting".
        return stop(process, args.label, started=until is not None and done.is_set())
    finally:
        done.set()


def stop(
    process: subprocess.Popen[str], label: str, grace_s: float = 20.0, started: bool = False
) -> int:
    """Ctrl-C: the terminal sent the interrupt to the command too, so let it end on its own
    (a server finishing its requests), relaying what it still prints; end it only if it has not
    within `grace_s` or on a second Ctrl-C. Stopping on request is a success: status 0."""
    assert process.stdout is not None
    deadline = threading.Timer(grace_s, process.terminate)
    deadline.start()
    try:
        for line in process.stdout:  # until the command closes its output, i.e. exits
            sys.stdout.write(line)
        process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
    finally:
        deadline.cancel()
    stopped(label, started)
    return 0


def stopped(label: str, started: bool) -> None:
    if started:
        print("  stopped by Ctrl-C (it had started and ran until then)", flush=True)
    else:
        print(f"  stopped by Ctrl-C while still {label}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
