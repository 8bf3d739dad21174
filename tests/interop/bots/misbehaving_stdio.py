#!/usr/bin/env python3
"""A stdio bot that misbehaves on purpose: `misbehaving_stdio.py MODE [N]` (standard library only).

Modes: garbage (N unreadable lines, then fallbacks), bare (fallbacks as bare text, no JSON),
skip_bare (as bare, but no answer at all to decision N), late (answer decision N, with its
request_id, only after sleeping the seconds given third), summary (play well, then print a
line of a megabyte after game_end), fork_exit (answer N decisions, then start a child that
keeps stdout open for a minute and exit with 0), forking (start a child that writes its pid to
the file named second and sleeps for a minute, then play well and exit at game_end),
exit (answer N decisions, then exit with code 1), killed (answer N decisions, then die of
the signal named third, SIGXCPU say, as at a CPU time limit), silent (read, never answer), deaf
(never read stdin, never answer), no_newline (answer well but end no reply with a newline).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def main() -> int:
    mode = sys.argv[1]
    if mode == "forking" and os.fork() == 0:
        with open(sys.argv[2], "w") as pid_file:
            pid_file.write(str(os.getpid()))
        time.sleep(60)
        return 0
    n = int(sys.argv[2]) if len(sys.argv) > 2 and mode != "forking" else 2
    if mode == "deaf":
        time.sleep(3600)
        return 0
    answered = 0
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "game_end":
            if mode == "summary":  # more than a pipe holds: it waits for the bridge to read it
                print("summary " + "x" * 1_000_000, flush=True)
            return 0
        if msg["type"] != "decision":
            continue
        fallback = msg["legal"]["fallback"]
        if mode == "garbage" and answered < n:
            print("this is not { json", flush=True)
        elif mode == "bare" or (mode == "skip_bare" and answered != n):
            print(fallback, flush=True)
        elif mode == "skip_bare":
            pass
        elif mode == "late" and answered == n:
            time.sleep(float(sys.argv[3]))
            print(json.dumps({"request_id": msg["request_id"], "action": fallback}), flush=True)
        elif mode == "fork_exit" and answered >= n:
            if os.fork() == 0:
                time.sleep(60)
            os._exit(0)
        elif mode == "exit" and answered >= n:
            print("misbehaving_stdio: exiting mid-game", file=sys.stderr)
            return 1
        elif mode == "killed" and answered >= n:
            os.kill(os.getpid(), signal.Signals[sys.argv[3]])
        elif mode == "silent":
            pass
        elif mode == "no_newline":  # printf("...") without \n: flushed, but never a line
            sys.stdout.write(json.dumps({"request_id": msg["request_id"], "action": fallback}))
            sys.stdout.flush()
        else:
            print(json.dumps({"request_id": msg["request_id"], "action": fallback}), flush=True)
        answered += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
