"""The part of a start and a stop that every service repeats: a daemon
known by its pid file, detached from the op (docs/protocol.md: a daemon
must not keep the op's stdout, stderr or process group)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class Credential:
    """An account a daemon is started as (the op must be root): for
    daemons that refuse to run as root."""

    uid: int
    gid: int


@dataclass(slots=True, frozen=True)
class Daemon:
    """A long-lived process a service's start leaves behind.

    argv[0] is the program: a path, as PATH is not searched here (svcrun
    gives ops the system's directories; shutil.which finds a program in
    them). It must be what keeps running, a binary or a script with a #!
    line, not a wrapper that execs another program: alive knows the
    daemon by it. log_file receives the daemon's stdout and stderr, appended;
    None discards them. Never the op's own: svcrun would wait for those
    pipes and the daemon would lose what it prints."""

    pid_file: str
    argv: list[str]
    env: dict[str, str] | None = None  # None: the op's own
    cwd: str | None = None  # None: the op's (the bundle root)
    log_file: str | None = None
    credential: Credential | None = None
    # Checked by alive: a pid file that outlived its daemon (a reboot)
    # names whatever process got the pid since.
    _program: str = field(init=False, default="")

    def __post_init__(self) -> None:
        if not self.argv:
            raise ValueError(f"daemon of {self.pid_file}: empty argv")
        object.__setattr__(self, "_program", os.path.realpath(self.argv[0]))

    def pid(self) -> tuple[int, bool]:
        """The pid of the pid file and whether that process is this
        daemon, alive. A missing or empty pid file is (0, False); a
        garbled one raises ValueError."""
        try:
            with open(self.pid_file) as f:
                s = f.read().strip()
        except FileNotFoundError:
            return 0, False
        if not s:
            return 0, False
        if not s.isdigit() or int(s) <= 0:
            raise ValueError(f"pid file {self.pid_file}: {s!r} is not a pid")
        pid = int(s)
        return pid, alive(pid, self._program)

    def alive(self) -> bool:
        """Whether the daemon of the pid file runs; a garbled pid file
        reads as not running."""
        try:
            return self.pid()[1]
        except ValueError:
            return False

    def start(self) -> bool:
        """Start the daemon unless it is alive already; return whether it
        started it. The daemon leads a session of its own (setsid), with
        stdin /dev/null and its output in log_file, and its pid is in the
        pid file when start returns."""
        if self.alive():
            return False
        if self.log_file is None:
            out = os.open(os.devnull, os.O_WRONLY)
        else:
            out = os.open(self.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        kw = {}
        if self.credential is not None:
            kw = {"user": self.credential.uid, "group": self.credential.gid, "extra_groups": []}
        try:
            p = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                close_fds=True,
                start_new_session=True,
                env=self.env,
                cwd=self.cwd,
                **kw,
            )
        except OSError as e:
            raise OSError(e.errno, f"start {self.argv[0]}: {e.strerror}") from None
        finally:
            os.close(out)
        # Popen returns once the kernel has begun the exec, before the new
        # program's arguments are in place: until then alive would not
        # know a script daemon by its command line.
        _wait_exec(p.pid)
        try:
            _write_atomic(self.pid_file, f"{p.pid}\n")
        except OSError as e:
            # Without its pid file no later op would find it, and the
            # next start would run a second one: it goes.
            _signal(p.pid, signal.SIGKILL)
            p.wait()
            raise OSError(e.errno, f"start {self.argv[0]}: write its pid file {self.pid_file}: {e.strerror} (the daemon was killed)") from None
        # Not waited for: the op exits and svcrun's subreaper (or init)
        # reaps it. Popen would reap it at exit otherwise: forget it.
        p.returncode = 0
        return True

    def wait(self, timeout: float) -> bool:
        """Wait up to timeout seconds for the daemon to end; return
        whether it did. It is not this process's child, so wait looks
        every 20 ms."""
        try:
            pid, ok = self.pid()
        except ValueError:
            return True
        return not ok or _wait_gone(pid, self._program, timeout)

    def stop(self, grace: float) -> tuple[bool, bool]:
        """SIGTERM to the daemon's session (its process group: start made
        it a leader), up to grace seconds for it to end, then SIGKILL; the
        pid file is removed. Returns (stopped, escalated): stopped is
        False when it was not running, escalated that SIGKILL was
        needed."""
        try:
            pid, ok = self.pid()
        except ValueError:
            ok = False
        if not ok:
            _remove(self.pid_file)
            return False, False
        _signal(pid, signal.SIGTERM)
        escalated = False
        if not _wait_gone(pid, self._program, grace):
            escalated = True
            _signal(pid, signal.SIGKILL)
            # SIGKILL cannot be ignored; the bound only guards a process
            # stuck in the kernel (an uninterruptible sleep).
            if not _wait_gone(pid, self._program, 30):
                raise TimeoutError(f"pid {pid} ({self.argv[0]}) outlived SIGKILL by 30 s")
        _remove(self.pid_file)
        return True, escalated


def alive(pid: int, program: str = "") -> bool:
    """Whether pid is a live process (even of another user) and not a
    zombie; with program, also that it runs that program (its executable,
    or the script its interpreter runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        # No procfs (macOS): kill(2) is all there is.
        return True
    # The state follows the command name's closing parenthesis; the name
    # itself may hold one.
    i = stat.rfind(b")")
    if i < 0 or stat[i + 2 : i + 3] in (b"Z", b"X"):
        return False
    # A process on its way out (PF_EXITING in its flags, the 7th field
    # after the name) has let go of its program (no exe, an empty
    # cmdline) before its descriptors: it is still the daemon, whose port
    # a start would find taken, until it is a zombie.
    fields = stat[i + 2 :].split()
    if len(fields) > 6 and fields[6].isdigit() and int(fields[6]) & _PF_EXITING:
        return True
    return not program or _runs(pid, program)


_PF_EXITING = 0x4


def _runs(pid: int, program: str) -> bool:
    try:
        if os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)") == program:
            return True
    except OSError:
        pass  # another user's process: its cmdline is still readable
    cmdline = _read(f"/proc/{pid}/cmdline")
    if cmdline is None:
        return False
    # The program itself, or a script after its interpreter and one
    # option (/usr/bin/python3 -IB bin/daemon).
    base = os.path.basename(program)
    args = [a.decode(errors="replace") for a in cmdline.split(b"\0")[:3]]
    return any(a == program or os.path.basename(a) == base for a in args if a)


def _wait_exec(pid: int, timeout: float = 5.0) -> None:
    if not os.path.isdir(f"/proc/{pid}"):
        return  # no procfs (macOS), or gone already
    deadline = time.monotonic() + timeout
    while not _read(f"/proc/{pid}/cmdline") and time.monotonic() < deadline:
        # Empty while the exec sets up, and for good once it has exited
        # (a zombie), which alive tells without the wait.
        if not alive(pid):
            return
        time.sleep(0.005)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _wait_gone(pid: int, program: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid, program):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _signal(pid: int, sig: int) -> None:
    """sig to pid's process group when pid leads one (so that the
    daemon's own children end too), else to pid."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
