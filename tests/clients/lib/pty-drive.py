#!/usr/bin/env python3
# tests/clients/lib/pty-drive.py: runs a terminal program (a TUI such as
# Claude Code's) in a pseudo-terminal of a given size and drives it like a
# person at the keyboard: a plan of steps, each "wait until the screen text
# matches a regular expression, then type these keys". Prints the whole
# transcript (escape sequences removed) on standard output, and exits 0 when
# every step's pattern was seen, 1 when one timed out (the transcript says
# where), 2 on a usage error.
#
#   pty-drive.py COLS ROWS TIMEOUT_S PLAN_JSON -- COMMAND [ARG...]
#
# PLAN_JSON: [["regex", "keys"], ...]; keys may hold "\r" (Enter), "\x1b"
# (Escape), "\x03" (Ctrl-C). The program's environment is this script's.
import json, os, pty, re, select, signal, struct, sys, termios, fcntl, time

ANSI = re.compile(r'\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>78]')


def main():
    if len(sys.argv) < 7 or sys.argv[5] != '--':
        print(__doc__ or 'usage', file=sys.stderr)
        return 2
    cols, rows, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    plan = json.loads(sys.argv[4])
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[6], sys.argv[6:])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
    raw = b''
    seen_upto = 0
    code = 0
    for pattern, keys in plan:
        rx = re.compile(pattern)
        until = time.time() + timeout
        found = False
        while time.time() < until:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b''
                if not chunk:
                    break
                raw += chunk
            text = ANSI.sub('', raw[seen_upto:].decode('utf-8', 'replace'))
            if rx.search(text):
                found = True
                break
        if not found:
            sys.stdout.write(ANSI.sub('', raw.decode('utf-8', 'replace')))
            sys.stdout.write('\n[pty-drive: timed out waiting for %r]\n' % pattern)
            code = 1
            break
        seen_upto = len(raw)
        time.sleep(0.3)
        # at once: an escape sequence split over two reads is an Escape
        if keys:
            os.write(fd, keys.encode())
    if code == 0:
        end = time.time() + 1.0
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                raw += chunk
        sys.stdout.write(ANSI.sub('', raw.decode('utf-8', 'replace')))
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    return code


sys.exit(main())
