"""What the test targets share (imported by them; conftest's Interp.place
copies it beside a target it moves into a chroot). Python 3.6+ syntax.

A target tells the test it is ready with say_ready(**fields): $PBP_READY
(the path the harness gives it) gets {"pid", "version": [major, minor,
micro]} and the fields, and side files beside it (ready_path(".split"))
carry what it measures later. say_failed(why) says why it cannot be ready,
which fails the test at once rather than at the ready timeout."""

import json
import os
import sys
import threading


def native_id():
    """The kernel's id of the calling thread (threading.get_native_id is 3.8+)."""
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes   # here: an interpreter built without _ctypes has get_native_id
    return ctypes.CDLL(None).syscall(186)  # SYS_gettid on x86-64 (3.6, 3.7)


def give_threads_native_ids():
    """3.6, 3.7: Thread.native_id is 3.8+; each thread then sets its own as it
    sets its ident, and the main thread has it at once."""
    if hasattr(threading.Thread, "native_id"):
        return
    set_ident = threading.Thread._set_ident

    def set_ident_and_native_id(self):
        set_ident(self)
        self.native_id = native_id()

    threading.Thread._set_ident = set_ident_and_native_id
    threading.main_thread().native_id = native_id()


def write_json(path, obj):
    """obj as JSON at path, whole or not at all: the tests poll for the file."""
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def ready_path(suffix=""):
    """$PBP_READY, or the file beside it that suffix names (".late", ...)."""
    return os.environ["PBP_READY"] + suffix


def say_ready(**fields):
    """$PBP_READY gets the target's pid and version, and fields."""
    info = {"pid": os.getpid(), "version": list(sys.version_info[:3])}
    info.update(fields)
    write_json(ready_path(), info)


def say_failed(why):
    """$PBP_READY gets why the target could not get ready (words, or the
    exception that stopped it)."""
    if isinstance(why, BaseException):
        why = "%s: %s" % (type(why).__name__, why)
    write_json(ready_path(), {"error": why})
