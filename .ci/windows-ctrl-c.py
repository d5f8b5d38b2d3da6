#!/usr/bin/env python3
"""Ctrl-C on Windows, through a real console: gate-check.exe runs under wine
on a pseudo-terminal, and a ^C typed into it reaches the process as
CTRL_C_EVENT (no Windows API can send one under wine 8, so a test binary
cannot do this itself). The check starts a grandchild in the background and
waits on a second one; after the interrupt gate-check must exit 130, say
it was interrupted by Ctrl-C, leave the ledger as it was, and leave no process of
the check behind.

Usage: windows-ctrl-c.py WINE GATE_CHECK_EXE
(WINEPREFIX and WINEDEBUG come from the environment.)"""

import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time

LEDGER = (
    "- [ ] G1: waits until interrupted\n"
    "  CHECK: start /b {image} -n 120 127.0.0.1 > nul& {image} -n 120 127.0.0.1 > nul\n"
    "  EXPECT: never\n"
    "  EVIDENCE: pending\n"
)


def windows(path):
    """A Unix path as wine names it on its Z: drive."""
    return "Z:" + path.replace("/", "\\")


def processes(image):
    """The wine processes running `image` (their command lines name it)."""
    found = subprocess.run(["pgrep", "-f", image], capture_output=True, text=True)
    return [line for line in found.stdout.split() if line]


def main():
    wine, binary = sys.argv[1], sys.argv[2]
    prefix = os.environ["WINEPREFIX"]
    image = f"ctrl-c-grandchild-{os.getpid()}.exe"
    with tempfile.TemporaryDirectory() as base:
        repository, approvals = os.path.join(base, "repo"), os.path.join(base, "approvals")
        os.mkdir(repository)
        shutil.copy(os.path.join(prefix, "drive_c/windows/system32/ping.exe"), os.path.join(repository, image))
        ledger = LEDGER.format(image=image)
        with open(os.path.join(repository, "GATES.md"), "w") as file:
            file.write(ledger)
        # Stores and home of its own: nothing of this run lands in the prefix's profile.
        environment = dict(
            os.environ,
            UNLAZY_APPROVAL_DIR=windows(approvals),
            UNLAZY_RECEIPT_DIR=windows(os.path.join(base, "receipts")),
            USERPROFILE=windows(os.path.join(base, "home")),
            NO_COLOR="1",
        )
        environment.pop("UNLAZY_SCOPE", None)
        pid, terminal = pty.fork()
        if pid == 0:
            os.chdir(repository)
            os.execvpe(wine, [wine, binary, "--approve", "--timeout", "120"], environment)
        output = b""
        deadline = time.monotonic() + 60
        # Positive first: the check and its background grandchild both run.
        while len(processes(image)) < 2:
            if time.monotonic() > deadline:
                sys.exit(f"ctrl-c: the check never started both processes:\n{output.decode(errors='replace')}")
            try:
                if select.select([terminal], [], [], 0.2)[0]:
                    output += os.read(terminal, 65536)
            except OSError:
                sys.exit(f"ctrl-c: gate-check ended before the interrupt:\n{output.decode(errors='replace')}")
        os.write(terminal, b"\x03")
        sent = time.monotonic()
        while True:
            try:
                if select.select([terminal], [], [], 1)[0]:
                    chunk = os.read(terminal, 65536)
                    if not chunk:
                        break
                    output += chunk
            except OSError:
                break
            if time.monotonic() - sent > 60:
                sys.exit("ctrl-c: gate-check did not end within 60 s of the interrupt")
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        text = output.decode(errors="replace").replace("\r\n", "\n")
        problems = []
        if code != 130:
            problems.append(f"exit code {code}, not 130")
        if "INTERRUPTED by Ctrl-C: 1 running check(s) stopped" not in text:
            problems.append("no 'INTERRUPTED by Ctrl-C' line")
        with open(os.path.join(repository, "GATES.md")) as file:
            if file.read() != ledger:
                problems.append("the ledger changed")
        left = time.monotonic() + 5
        while processes(image) and time.monotonic() < left:
            time.sleep(0.1)
        if processes(image):
            problems.append(f"processes of the check survived: {processes(image)}")
        if problems:
            sys.exit("ctrl-c: " + "; ".join(problems) + "\n" + text)
        print("windows: Ctrl-C ended the run (exit 130), left the ledger as it was and no process of the check behind")


if __name__ == "__main__":
    main()
