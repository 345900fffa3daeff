"""Output files: written as a Unix tool writes them (special files written
through, symlinks followed unless fs.protected_symlinks would refuse them, a
file's mode, owner and links kept), atomic for regular files, owned by the
invoking user under sudo; checked before sampling; the real errno said.

Every special file here is made with mknod/mkfifo/bind in a temporary
directory: never the machine's own /dev entries."""

import gzip
import json
import os
import socket
import stat
import subprocess
import threading
import time

import pytest

from conftest import PYBPFPROF, _discover
from profile import WORKERS

PROFILE = "main (app.py:3);work (app.py:7) 5\nmain (app.py:3) 2\n"
NOBODY = 65534


def convert(tmp_path, out, env=None, src=None, umask=None, **kwargs):
    if src is None:
        src = tmp_path / "in.txt"
        src.write_text(PROFILE)
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([PYBPFPROF, "convert", "-i", str(src), "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=60,
                          preexec_fn=preexec, **kwargs)


def big_input(tmp_path):
    """A profile far larger than any stdio buffer (~400 KB collapsed)."""
    src = tmp_path / "big.txt"
    src.write_text("".join("main (app.py:1);work_%d (app.py:%d) %d\n" % (i, i, i + 1)
                           for i in range(10000)))
    return src


def one_line(r, *words):
    assert r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


# --- symlinks ----------------------------------------------------------------------

def test_symlink_at_output_is_followed(tmp_path):
    victim = tmp_path / "target.txt"
    victim.write_text("old\n")
    out = tmp_path / "profile.txt"
    os.symlink(str(victim), str(out))
    r = convert(tmp_path, out)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(str(out)) and victim.read_text() == PROFILE
    # A dangling link: the file it names is created.
    os.unlink(str(victim))
    r = convert(tmp_path, out)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(str(out)) and victim.read_text() == PROFILE


def sticky_dir_with_link(tmp_path, victim, link_owner):
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    os.chmod(str(sticky), 0o1777)       # root's, sticky, world-writable: like /tmp
    link = sticky / "profile.txt"
    os.symlink(str(victim), str(link))
    os.lchown(str(link), link_owner, link_owner)
    return link


def test_symlink_planted_in_sticky_dir_is_refused(tmp_path):
    """fs.protected_symlinks' rule, whether or not the sysctl is on: a link
    in a sticky world-writable directory owned by someone else than the
    directory's owner and the invoking user is neither followed nor
    replaced."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = sticky_dir_with_link(tmp_path, victim, NOBODY)
    r = convert(tmp_path, link)
    assert r.returncode == 10, r.stderr
    one_line(r, "cannot write", "protected_symlinks")
    assert victim.read_text() == "precious\n"
    assert os.path.islink(str(link)) and os.readlink(str(link)) == str(victim)
    assert sorted(os.listdir(str(link.parent))) == ["profile.txt"]


def test_symlink_of_invoking_user_in_sticky_dir_is_followed(tmp_path):
    victim = tmp_path / "mine.txt"
    victim.write_text("old\n")
    link = sticky_dir_with_link(tmp_path, victim, NOBODY)
    env = dict(os.environ, SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY))
    r = convert(tmp_path, link, env=env)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == PROFILE and os.path.islink(str(link))


def test_link_to_own_descriptor_writes_to_it(tmp_path):
    """What -o /dev/stdout does (here through a link of our own to
    /proc/self/fd/1): the profile goes to the descriptor, a pipe here."""
    link = tmp_path / "stdout"
    os.symlink("/proc/self/fd/1", str(link))
    r = convert(tmp_path, link)
    assert r.returncode == 0, r.stderr
    assert r.stdout == PROFILE
    assert os.path.islink(str(link))


# --- special files -------------------------------------------------------------------

def test_character_device_is_written_through(tmp_path):
    null = tmp_path / "null"
    os.mknod(str(null), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    r = convert(tmp_path, null)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.lstat(str(null)).st_mode)
    assert sorted(os.listdir(str(tmp_path))) == ["in.txt", "null"]


def test_block_device_is_refused(tmp_path):
    blk = tmp_path / "blk"
    os.mknod(str(blk), 0o600 | stat.S_IFBLK, os.makedev(0, 0))     # no device behind it
    r = convert(tmp_path, blk)
    assert r.returncode == 10, r.stderr
    one_line(r, "cannot write", "block device")
    assert stat.S_ISBLK(os.lstat(str(blk)).st_mode)


def test_kernel_files_are_refused(tmp_path):
    """A file of procfs or sysfs is a setting, not a place for a profile:
    a child's /proc/PID/comm (which takes whatever is written, renaming the
    process) stays as it was, named or reached through a descriptor of
    ours (/proc/self/fd/N, what /dev/fd/N is) or another's (/proc/PID/fd/N),
    which were written into; /proc/version said so too, not ENOENT of a
    temporary that procfs cannot hold."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        comm = "/proc/%d/comm" % child.pid
        fd = os.open(comm, os.O_RDWR)
        holder = subprocess.Popen(["sleep", "60"], pass_fds=[fd])
        try:
            for out in (comm, "/proc/self/fd/%d" % fd, "/proc/%d/fd/%d" % (holder.pid, fd)):
                r = convert(tmp_path, out, pass_fds=[fd])
                assert r.returncode == 10, (out, r.stderr)
                one_line(r, "cannot write", "kernel file")
        finally:
            holder.kill()
            holder.wait()
            os.close(fd)
        with open(comm) as f:
            assert f.read() == "sleep\n"
    finally:
        child.kill()
        child.wait()
    r = convert(tmp_path, "/proc/version")
    assert r.returncode == 10, r.stderr
    one_line(r, "cannot write /proc/version", "kernel file")


def read_in_thread(path_or_sock, got):
    def reader():
        if isinstance(path_or_sock, socket.socket):
            conn, _ = path_or_sock.accept()
            with conn:
                got.append(conn.makefile("rb").read())
        else:
            with open(path_or_sock, "rb") as f:
                got.append(f.read())
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    return t


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    got = []
    t = read_in_thread(str(fifo), got)
    r = convert(tmp_path, fifo)
    t.join(10)
    assert r.returncode == 0, r.stderr
    assert got == [PROFILE.encode()]
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode)


def test_fifo_without_reader_waits_and_says_so(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    src = tmp_path / "in.txt"
    src.write_text(PROFILE)
    p = subprocess.Popen([PYBPFPROF, "convert", "-i", str(src), "-o", str(fifo)],
                         stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        assert p.poll() is None, p.stderr.read()
        with open(str(fifo), "rb") as f:
            assert f.read() == PROFILE.encode()
        assert p.wait(10) == 0
        assert "waiting for a reader" in p.stderr.read()
    finally:
        p.kill()
        p.wait()


def test_socket_is_connected_and_written_through(tmp_path):
    path = tmp_path / "sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)
    srv.settimeout(10)
    got = []
    try:
        t = read_in_thread(srv, got)
        r = convert(tmp_path, path)
        t.join(10)
    finally:
        srv.close()
    assert r.returncode == 0, r.stderr
    assert got == [PROFILE.encode()]
    assert stat.S_ISSOCK(os.lstat(str(path)).st_mode)


# --- regular files: mode, owner, links -----------------------------------------------

def test_new_file_respects_umask(tmp_path):
    out = tmp_path / "p.txt"
    r = convert(tmp_path, out, umask=0o077)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == 0o600
    out.unlink()
    r = convert(tmp_path, out, umask=0o002)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == 0o664


def test_existing_file_keeps_mode_and_owner(tmp_path):
    out = tmp_path / "p.txt"
    out.write_text("old\n")
    os.chmod(str(out), 0o600)
    os.chown(str(out), NOBODY, NOBODY)
    r = convert(tmp_path, out)
    assert r.returncode == 0, r.stderr
    st = os.stat(str(out))
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o600, NOBODY, NOBODY)
    assert out.read_text() == PROFILE


def test_hard_linked_file_is_written_in_place(tmp_path):
    out = tmp_path / "p.txt"
    out.write_text("a much longer old content than the profile will be\n" * 10)
    other = tmp_path / "other-name.txt"
    os.link(str(out), str(other))
    ino = os.stat(str(out)).st_ino
    r = convert(tmp_path, out)
    assert r.returncode == 0, r.stderr
    assert os.stat(str(out)).st_ino == ino and os.stat(str(out)).st_nlink == 2
    assert other.read_text() == PROFILE


def test_no_temporary_left_and_unwritable_dir_fails_cleanly(tmp_path):
    r = convert(tmp_path, tmp_path / "p.txt")
    assert r.returncode == 0
    assert sorted(os.listdir(str(tmp_path))) == ["in.txt", "p.txt"]
    r = convert(tmp_path, tmp_path / "no-such-dir" / "p.txt")
    assert r.returncode == 10, r.stderr
    assert r.stderr.count("\n") == 1 and "cannot write" in r.stderr


def test_owned_by_invoking_user_under_sudo(tmp_path):
    out = tmp_path / "p.html"
    r = convert(tmp_path, out, env=dict(os.environ, SUDO_UID="65534", SUDO_GID="65534"))
    assert r.returncode == 0, r.stderr
    st = os.stat(str(out))
    assert (st.st_uid, st.st_gid) == (65534, 65534)
    assert stat.S_IMODE(st.st_mode) == 0o644


# --- errors: the real errno ------------------------------------------------------------

def test_full_device_says_enospc(tmp_path):
    full = tmp_path / "full"
    os.mknod(str(full), 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    r = convert(tmp_path, full, src=big_input(tmp_path))
    assert r.returncode == 10, r.stderr
    one_line(r, "cannot write", "No space left on device")
    assert stat.S_ISCHR(os.lstat(str(full)).st_mode)


def tmpfs_at(mnt, opts):
    """A tmpfs of our own at mnt, for as long as the fixture that yields from it."""
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.fixture
def small_tmpfs(tmp_path):
    yield from tmpfs_at(tmp_path / "small", "size=64k")


@pytest.mark.parametrize("ext", ["txt", "html"])
def test_full_disk_says_enospc(tmp_path, small_tmpfs, ext):
    r = convert(tmp_path, small_tmpfs / ("p." + ext), src=big_input(tmp_path))
    assert r.returncode == 10, r.stderr
    one_line(r, "cannot write", "No space left on device")
    assert os.listdir(str(small_tmpfs)) == []       # the temporary went too


def test_closed_pipe_says_epipe(tmp_path):
    """A reader that closed the pipe early: said (EPIPE), exit 10, not a
    silent death by SIGPIPE."""
    src = big_input(tmp_path)
    rd, wr = os.pipe()
    os.close(rd)
    try:
        r = subprocess.run([PYBPFPROF, "convert", "-i", str(src)], stdout=wr,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(wr)
    assert r.returncode == 10, (r.returncode, r.stderr)
    one_line(r, "cannot write stdout", "Broken pipe")


# --- .gz -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["p.txt.gz", "p.gz", "p.collapsed.gz"])
def test_gz_is_gzipped_collapsed(tmp_path, name):
    out = tmp_path / name
    r = convert(tmp_path, out)
    assert r.returncode == 0, r.stderr
    with gzip.open(str(out), "rt") as f:
        assert f.read() == PROFILE


def test_gz_of_other_formats(tmp_path):
    r = convert(tmp_path, tmp_path / "p.json.gz")
    assert r.returncode == 0, r.stderr
    with gzip.open(str(tmp_path / "p.json.gz"), "rt") as f:
        assert "speedscope" in json.load(f)["$schema"]
    # pprof is gzip already: one layer, what go tool pprof reads.
    for name in ("p.pb.gz", "p.pprof.gz"):
        r = convert(tmp_path, tmp_path / name)
        assert r.returncode == 0, r.stderr
        inner = gzip.decompress((tmp_path / name).read_bytes())
        assert inner[:2] != b"\x1f\x8b"


# --- checked before sampling ------------------------------------------------------------

def first_interp():
    usable = [i for i in _discover() if not i.skip_reason]
    assert usable, "no interpreter"
    return usable[0]


@pytest.fixture
def readonly_dir(tmp_path):
    yield from tmpfs_at(tmp_path / "ro", "ro,size=64k")


@pytest.mark.parametrize("where", ["missing dir", "directory", "read-only"])
def test_bad_output_is_said_before_sampling(start_target, tmp_path, readonly_dir, where):
    out = {"missing dir": tmp_path / "no-such-dir" / "p.txt",
           "directory": tmp_path,
           "read-only": readonly_dir / "p.txt"}[where]
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    t0 = time.monotonic()
    r = subprocess.run([PYBPFPROF, "-p", str(pid), "-d", "30", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 10, r.stderr
    one_line(r, "cannot write")
    assert took < 10, "said only after %.1f s" % took


def test_closed_stdout_pipe_is_said_before_sampling(start_target, tmp_path):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    rd, wr = os.pipe()
    os.close(rd)
    t0 = time.monotonic()
    try:
        r = subprocess.run([PYBPFPROF, "-p", str(pid), "-d", "30", "-o", "-"], stdout=wr,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(wr)
    assert r.returncode == 10, r.stderr
    one_line(r, "cannot write stdout", "Broken pipe")
    assert time.monotonic() - t0 < 10


def test_record_writes_through_a_fifo(start_target, tmp_path):
    """A recording's output opened at the start, written at the end: the
    FIFO stays, its reader gets the profile."""
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    got = []
    t = read_in_thread(str(fifo), got)
    r = subprocess.run([PYBPFPROF, "-p", str(pid), "-d", "1", "-q", "-o", str(fifo)],
                       capture_output=True, text=True, timeout=60)
    t.join(10)
    assert r.returncode == 0, r.stderr
    assert got and b"spin" in got[0], got
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode)
