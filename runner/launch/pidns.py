"""Each agent in a PID namespace of its own: it sees only its own processes, and they end with it.

In the host's process table a bot could read the worker's environment (the database URL, the
admin token) and the other agents' (their seat tokens) through /proc, signal the worker and
the game master, and leave a process behind (double fork, setsid) that lived on into the next
game of its set. In a namespace of its own, with its own /proc, it sees none of them, and
when it ends the kernel ends every process it started, wherever it moved them. What it writes
to /tmp stays its own too (_own_tmp). An agent that dials its game master's Unix socket
(ARENA_GAME_MASTER_SOCKET) is sealed too: a network namespace of its own, holding only a
loopback of its own, puts no port of the host (Redis, the database, the dashboard, the other
agents) and nothing beyond in its reach, and every filesystem is read-only to it but its own
directory (HOME, TMPDIR), its /tmp and /dev/shm, with the other agents' directories, the data
directory and agents' logs out of its sight (Room).

The fork server's child for an agent calls `enter()` before it becomes the agent. Three
processes then stand where one did:

- the relay, that child itself, stays in the fork server's namespace and process table, as
  the agent's pid there; it waits and ends as the agent ended (same exit code or signal, the
  agent's CPU time counted in its own), so the fork server reports the agent as before;
- process 1 of the new namespace reaps what the agent orphans, and when the agent ends, exits:
  with it the kernel kills everything left in the namespace;
- process 2 is the agent (process 1 gets only the signals it has a handler for, and the
  worker's SIGTERM must end an agent).

All three stay in the agent's process group, so the worker's signals reach the agent as before;
the relay ignores SIGTERM, SIGINT and SIGHUP (the agent decides), process 1 gets none of them.
The agent keeps no capability (it would otherwise be root, and could unmount its /proc).

As root (or with CAP_SYS_ADMIN) the namespaces are made directly. Any other user makes a user
namespace first, in which it keeps its own uid and gid and may then make the other two (where
the kernel allows unprivileged user namespaces, as most do; a container's seccomp profile
usually does not): its agents are as shut off from the worker's processes as a root worker's.
Where neither works, `enter()` returns at once and the agent runs in the host's process table,
as documented.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import signal
import socket
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from runner.pids import die_with_parent

# <sched.h> and <sys/mount.h>.
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
# <linux/mount.h>, <fcntl.h>; mount_setattr is 442 on every architecture (asm-generic too).
_SYS_MOUNT_SETATTR, _MOUNT_ATTR_RDONLY = 442, 0x1
_AT_FDCWD, _AT_RECURSIVE = -100, 0x8000
# What an agent may write to its own /tmp and a sealed agent's fresh /dev/shm (memory it may
# fill through them), and what covers a directory hidden from a sealed agent.
_SHM = "mode=1777,size=65536k"
_EMPTY = "mode=755,size=64k"
# <linux/sockios.h> and <net/if.h>.
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
_MNT_DETACH = 0x2
# The character devices an agent's /dev holds, as a container's does.
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# <linux/prctl.h> and <linux/capability.h>.
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# The fork server's option that leaves its agents in the host's process table, and the one,
# repeatable, that names a directory sealed agents must not see into.
OFF = "--no-pid-namespaces"
HIDE = "--hide"


def available() -> bool:
    """Whether this process may give an agent its namespaces and its own /proc (tried in a
    child, which then exits)."""
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if not _unshare(libc):
            os._exit(1)
        first = os.fork()  # the namespace's process 1, which alone may mount its /proc
        if first == 0:
            _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
            os._exit(0 if _mount_proc(libc) else 1)
        _, status = os.waitpid(first, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@dataclass(frozen=True)
class Room:
    """An agent's own places (enter): `own` its own directory (HOME, TMPDIR), where it writes;
    `visible` what it must reach as it is (its bot's directory, its game master's socket).
    A `sealed` agent (one that dials its game master's Unix socket) writes nowhere else and
    sees nothing of `hidden` (every agent's own directory but its own, the data directory with
    the database, agents' logs); `visible` stays in its sight, read-only."""

    own: str
    visible: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    sealed: bool = False


def enter(room: Room | None = None) -> bool:
    """Return in the agent, process 2 of a new PID namespace with its own /proc; False if no
    namespace could be made (the agent then runs here).

    With a `room`, its /tmp is its own too (_own_tmp). A sealed room shuts it in further: a
    network namespace of its own, with nothing in it but a loopback of its own (no address of
    the host's, such as Redis, the database or the other agents, and nothing beyond; where the
    kernel refuses one, it keeps the host's network), and a read-only view of the filesystems
    in which the room's hidden directories look empty (_seal_files)."""
    libc = ctypes.CDLL(None, use_errno=True)
    sealed = room is not None and room.sealed
    if sealed and _unshare(libc, _CLONE_NEWNET):
        _loopback_up()
    elif not _unshare(libc):
        drop_capabilities()  # a root worker without CAP_SYS_ADMIN has others to keep
        return False
    ended_r, ended_w = os.pipe()
    first = os.fork()
    if first != 0:
        os.close(ended_w)
        _relay(first, ended_r)
    os.close(ended_r)
    die_with_parent(signal.SIGKILL)
    _own_views(libc)
    if room is not None:
        own_tmp = _own_tmp(libc, room)
        if room.sealed:
            _seal_files(libc, room, own_tmp)
    agent = os.fork()
    if agent != 0:
        _first_process(agent, ended_w)
    os.close(ended_w)
    die_with_parent(signal.SIGKILL)
    drop_capabilities()
    return True


def _unshare(libc: ctypes.CDLL, more: int = 0) -> bool:
    """Make a PID namespace for this process's children and a mount namespace (and `more`) for
    itself; for a user other than root, inside a user namespace of its own, mapping only its
    uid and gid (so files keep their owners, and it can become no one else)."""
    if libc.unshare(_CLONE_NEWPID | _CLONE_NEWNS | more) == 0:
        return True
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNS | more) != 0:
        return False
    maps = {"setgroups": "deny", "uid_map": f"{uid} {uid} 1", "gid_map": f"{gid} {gid} 1"}
    try:
        for name, text in maps.items():  # in this order: a gid_map needs setgroups denied
            Path(f"/proc/self/{name}").write_text(text)
    except OSError as error:  # without its ids in the namespace, nothing could run as the agent
        os.write(2, f"arena: cannot map the agent's user in its namespace: {error}\n".encode())
        os._exit(127)
    return True


def _own_tmp(libc: ctypes.CDLL, room: Room) -> bool:
    """A /tmp of the agent's own: the host's, seen through an overlay whose writes stay in the
    agent's mount namespace (on a tmpfs of /dev/shm's size). What programs write to /tmp
    whatever TMPDIR says then neither meets nor reaches the other agents': every JVM, say,
    keeps /tmp/hsperfdata_USER/PID, PID being 2 in every agent's namespace, and printed on
    stdout, a stdio bot's reply channel, that another had it locked. The room's own directory
    and visible paths are bound back as they are (writes in its own are real, and a socket is
    not reached through an overlay). True if done; where the kernel cannot (an overlay in a
    user namespace needs Linux 5.11), /tmp stays the host's."""
    with _opened(("/tmp", room.own, *room.visible)) as kept:
        host_tmp = kept.get("/tmp")
        upper = _MS_NOSUID | _MS_NODEV
        if host_tmp is None or not _mount(libc, "tmpfs", "/tmp", "tmpfs", upper, _SHM):
            return False
        os.mkdir("/tmp/upper")
        os.mkdir("/tmp/work")
        layers = f"lowerdir=/proc/self/fd/{host_tmp},upperdir=/tmp/upper,workdir=/tmp/work"
        if not _mount(libc, "overlay", "/tmp", "overlay", 0, layers):
            libc.umount2(b"/tmp", _MNT_DETACH)
            return False
        for path, fd in kept.items():
            if path != "/tmp" and os.path.commonpath(("/tmp", path)) == "/tmp":
                _mount(libc, f"/proc/self/fd/{fd}", path, None, _MS_BIND)
    return True


def _seal_files(libc: ctypes.CDLL, room: Room, own_tmp: bool) -> None:
    """Every mount read-only but its own directory (and its own /tmp, if it has one); the
    hidden directories empty, but for its own directory and visible paths, bound back in; a
    fresh /dev/shm. Partners then find no place to leave each other a note (the other agents'
    directories look empty), and the arena's code, its database and its logs are out of a
    bot's reach. Where the kernel cannot make mounts read-only at one stroke (mount_setattr,
    Linux 5.12), nothing of this is done."""
    if not _mount_attributes(libc, "/", set_=_MOUNT_ATTR_RDONLY, recursive=True):
        return
    hidden = [path for path in room.hidden if os.path.isdir(path)]
    with _opened((room.own, *room.visible)) as kept:  # before a hidden directory covers them
        for path in hidden:
            _mount(libc, "tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, _EMPTY)
        for path, fd in kept.items():
            covered = not os.path.lexists(path)  # by a hidden directory
            if covered:  # a place to bind it to
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.mkdir(path)
                else:
                    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            if covered or path == room.own:  # its own directory: a mount to make writable
                _mount(libc, f"/proc/self/fd/{fd}", path, None, _MS_BIND)
    for writable in (room.own, "/tmp") if own_tmp else (room.own,):  # binds of read-only ones
        _mount_attributes(libc, writable, clear=_MOUNT_ATTR_RDONLY)
    for path in hidden:
        _mount_attributes(libc, path, set_=_MOUNT_ATTR_RDONLY)
    _mount(libc, "tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, _SHM)


@contextlib.contextmanager
def _opened(paths: Iterable[str]) -> Iterator[dict[str, int]]:
    """Each of `paths` that exists, opened (O_PATH): what a mount over it would cover can
    still be bound back from its descriptor."""
    opened: dict[str, int] = {}
    try:
        for path in paths:
            with contextlib.suppress(OSError):  # a socket not there yet: the agent will say so
                opened.setdefault(path, os.open(path, os.O_PATH))
        yield opened
    finally:
        for fd in opened.values():
            os.close(fd)


def _mount_attributes(
    libc: ctypes.CDLL, path: str, *, set_: int = 0, clear: int = 0, recursive: bool = False
) -> bool:
    """mount_setattr(2) on the mount at path (and, recursive, every mount below it)."""
    attributes = (ctypes.c_uint64 * 4)(set_, clear, 0, 0)  # struct mount_attr
    flags = _AT_RECURSIVE if recursive else 0
    done = libc.syscall(
        _SYS_MOUNT_SETATTR, _AT_FDCWD, path.encode(), flags, attributes, ctypes.sizeof(attributes)
    )
    return bool(done == 0)


def _loopback_up() -> None:
    """Bring up the new network namespace's loopback, down at first: a bot may talk to its own
    helpers on 127.0.0.1 (partners, each in a namespace of its own, do not share it)."""
    ifreq = struct.Struct("16sH22x")  # struct ifreq: the name, then ifr_flags in the union
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        _, flags = ifreq.unpack(fcntl.ioctl(sock, _SIOCGIFFLAGS, ifreq.pack(b"lo", 0)))
        fcntl.ioctl(sock, _SIOCSIFFLAGS, ifreq.pack(b"lo", flags | _IFF_UP))


def _own_views(libc: ctypes.CDLL) -> None:
    """The agent's own /proc, /sys and /dev, in its own mount namespace (private first, so that
    nothing propagates back to the host's). The host's /proc would still list every process.
    Without a capability the agent is still uid 0, who may write what the kernel leaves to the
    file's owner: in a writable /proc/sys or /sys, host-wide settings (kernel.core_pattern runs
    a program as root outside every namespace), and in the host's /dev, its disks. So /proc/sys
    and the like are read-only, /sys is a fresh read-only one, and /dev holds only the usual
    character devices and an empty /dev/shm of its own."""
    _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
    if not _mount_proc(libc):
        os.write(2, b"arena: cannot mount the agent's own /proc\n")
        os._exit(127)  # the host's would show the worker's environment
    for path in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):
        if os.path.exists(path):
            _mount(libc, path, path, None, _MS_BIND | _MS_REC)
            _mount(libc, None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY)
    hidden = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    if not _mount(libc, "sysfs", "/sys", "sysfs", hidden):  # a user namespace may not
        _mount(libc, "tmpfs", "/sys", "tmpfs", hidden)
    _own_dev(libc)


def _mount_proc(libc: ctypes.CDLL) -> bool:
    return _mount(libc, "proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)


def _own_dev(libc: ctypes.CDLL) -> None:
    """A fresh /dev holding the host's devices of _DEVICES, each bound to its place (a user
    namespace may not make device nodes, only bind the host's)."""
    with contextlib.ExitStack() as opened:
        devices = {}
        for name in _DEVICES:
            with contextlib.suppress(OSError):  # a device short is better than no agent
                devices[name] = os.open(f"/dev/{name}", os.O_PATH)
                opened.callback(os.close, devices[name])
        options = "mode=755,size=65536k"
        if not _mount(libc, "tmpfs", "/dev", "tmpfs", _MS_NOSUID | _MS_NOEXEC, options):
            return
        for name, fd in devices.items():
            os.close(os.open(f"/dev/{name}", os.O_CREAT | os.O_WRONLY, 0o666))
            _mount(libc, f"/proc/self/fd/{fd}", f"/dev/{name}", None, _MS_BIND)
    os.mkdir("/dev/shm", 0o1777)
    os.chmod("/dev/shm", 0o1777)  # mkdir's mode is cut by the umask
    os.symlink("/proc/self/fd", "/dev/fd")
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{fd}", f"/dev/{name}")


def _mount(
    libc: ctypes.CDLL,
    source: str | None,
    target: str,
    kind: str | None,
    flags: int,
    data: str | None = None,
) -> bool:
    def raw(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    return bool(
        libc.mount(raw(source), raw(target), raw(kind), ctypes.c_ulong(flags), raw(data)) == 0
    )


def drop_capabilities() -> None:
    """Leave the agent no capability, now or after any exec: as root it kept them all, and one
    umount of its /proc showed it the host's again (the worker's environment with it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for capability in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)  # none to regain at an exec
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    none = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; two words each
    libc.capset(header, none)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # nor through a set-user-ID program


def _first_process(agent: int, ended_w: int) -> NoReturn:
    """Reap every process of the namespace until the agent ends, hand its wait status to the
    relay, and exit, which ends the namespace."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:  # cannot happen before the agent is reaped; be safe
            os._exit(1)
        if pid == agent:
            os.write(ended_w, b"%d" % status)
            os._exit(0)


def _relay(first: int, ended_r: int) -> NoReturn:
    """End as the agent ended, once the namespace is gone."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    status = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(ended_r, 32):
            status += chunk
    os.waitpid(first, 0)
    if not status:  # process 1 was killed (SIGKILL to the group): so was the agent
        _die_of(signal.SIGKILL)
    code = int(status)
    if os.WIFSIGNALED(code):
        _die_of(os.WTERMSIG(code))
    os._exit(os.waitstatus_to_exitcode(code))


def _die_of(signum: int) -> NoReturn:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if signum not in (signal.SIGKILL, signal.SIGSTOP):  # the two that cannot be handled
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # not reached: the signal ended the agent, so it ends the relay
