"""Output files: atomic, never through a planted symlink, owned by the
invoking user under sudo."""

import os
import stat
import subprocess

from conftest import PYBPFPROF

PROFILE = "main (app.py:3);work (app.py:7) 5\nmain (app.py:3) 2\n"


def convert(tmp_path, out, env=None):
    src = tmp_path / "in.txt"
    src.write_text(PROFILE)
    return subprocess.run([PYBPFPROF, "convert", "-i", str(src), "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=60)


def test_symlink_at_output_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "profile.txt"
    os.symlink(str(victim), str(out))
    r = convert(tmp_path, out)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(str(out)) and out.read_text() == PROFILE


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
