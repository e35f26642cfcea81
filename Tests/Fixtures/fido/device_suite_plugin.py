"""pytest plugin: python-fido2 2.2.1's own device tests against Touchstone.

python-fido2's source release has, in tests/device/, tests that run against
"a connected FIDO authenticator": its conftest finds one through
fido2.hid.list_descriptors() (hidraw nodes), asks a person to touch it
(Printer.touch prints "Touch the Authenticator"), and to unplug and replug it
before a factory reset. This plugin points those tests at Touchstone's
authenticator on a loopback UDP port (ctap_udp.py) and answers every touch
prompt by running `$TOUCHSTONE_CLI sim touch FINGER --wait 60`:

    cd fido2-2.2.1 &&
    PYTHONPATH=/path/to/Tests/Fixtures/fido TOUCHSTONE_CLI=/path/to/touchstone \\
      fido-venv/bin/pytest -p device_suite_plugin -p no:cacheprovider \\
        --touchstone-port PORT --touchstone-touch FINGER tests/device

(fido-venv/bin/pytest rather than `python -m pytest`, which would put the
current folder first on sys.path and so import the release's fido2/ source
instead of the venv's hash-checked copy: the same 2.2.1 code, though.)

What it changes, and nothing else:
  * fido2.hid.list_descriptors / get_descriptor / open_connection (patched
    when pytest imports this plugin, before the suite's conftest imports
    them by name): the UDP authenticator is the one device there is;
  * the suite's Printer.touch: still prints, and also queues one `sim touch`
    (the suite prompts once per touch: before authenticatorSelection, and
    whenever the authenticator's keep-alive turns to UPNEEDED);
  * the suite's DeviceManager._reconnect_usb (unplug, wait for the hidraw
    node to go, replug, wait for a new one): closes the connection, runs the
    --touchstone-replug command if given (it may print a new port as its last
    line), and opens the authenticator again.
The suite's own precautions stay unless asked otherwise: it refuses an
authenticator with a PIN or built-in user verification configured (getInfo
options clientPin or uv true), and it factory-resets the authenticator at
the end (authenticatorReset, after a "replug"). Touchstone's authenticator
always has user verification of its own (a finger or the passcode), so:
  * --touchstone-accept-uv hides `uv: true` from that one check (the
    DeviceManager's constructor) and from nothing else; clientPin stays
    refused, since the suite would then not know the PIN;
  * --touchstone-hide-credman hides credential management (getInfo's
    credMgmt) from the suite: its credential management tests, and its
    fixtures that clean up through credential management, get their tokens
    with a PIN (getPinToken), which an authenticator verifying users
    itself has not; Touchstone's tests drive credential management through
    built-in UV instead (webauthn_client.py credman);
  * --touchstone-no-reset tells the suite it cannot reset this
    authenticator (as it does itself for a transport not in
    transportsForReset): the tests that need a reset are skipped, and none
    is done at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace

import pytest

import fido2.hid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ctap_udp import (  # noqa: E402
    DEFAULT_HOST,
    DEFAULT_TIMEOUT,
    UdpCtapHidConnection,
    udp_descriptor,
)

TOUCH_WAIT_SECONDS = 60


class _Target:
    """Where the authenticator is; set by pytest_configure, moved by a replug."""

    host = DEFAULT_HOST
    port: int | None = None
    timeout = DEFAULT_TIMEOUT


def _list_descriptors():
    if _Target.port is None:
        return []
    return [udp_descriptor(_Target.port, _Target.host)]


def _get_descriptor(path):
    for descriptor in _list_descriptors():
        if descriptor.path == path:
            return descriptor
    raise OSError(f"no authenticator at {path!r} (the UDP one is at "
                  f"{_Target.host}:{_Target.port})")


def _open_connection(descriptor):
    scheme, host, port = str(descriptor.path).rsplit(":", 2)
    if scheme != "udp":
        raise OSError(f"not a UDP authenticator: {descriptor.path!r}")
    return UdpCtapHidConnection(int(port), host, _Target.timeout)


# Before the suite's conftest runs `from fido2.hid import list_descriptors,
# open_connection, open_device`: a plugin given with -p is imported first.
fido2.hid.list_descriptors = _list_descriptors
fido2.hid.get_descriptor = _get_descriptor
fido2.hid.open_connection = _open_connection


class TouchQueue:
    """One `sim touch` per prompt, run one after the other in a thread."""

    def __init__(self, cli: str, finger: str, wait: int):
        self.command = [cli, "sim", "touch", finger, "--wait", str(wait)]
        self.exits: list[int] = []
        self._wanted = 0
        self._started = 0
        self._closing = False
        self._process: subprocess.Popen | None = None
        self._condition = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="touch", daemon=True)
        self._thread.start()

    def request(self) -> None:
        with self._condition:
            self._wanted += 1
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                while self._started >= self._wanted and not self._closing:
                    self._condition.wait()
                if self._closing:
                    return
                self._started += 1
                self._process = subprocess.Popen(
                    self.command, stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                )
            output, _ = self._process.communicate()
            code = self._process.returncode
            with self._condition:
                self.exits.append(code)
                self._process = None
            if code != 0:
                sys.stderr.write(f"touchstone: {' '.join(self.command[1:])} exited {code}: "
                                 f"{output.strip()}\n")

    def close(self, grace: float = 10.0) -> None:
        """Lets a run in flight finish (for `grace` seconds), drops the rest."""
        with self._condition:
            self._closing = True
            self._condition.notify()
        self._thread.join(grace)
        if self._thread.is_alive():
            with self._condition:
                process = self._process
            if process is not None:
                process.terminate()
            self._thread.join(10)

    @property
    def pending(self) -> int:
        with self._condition:
            return self._wanted - self._started


_touches: TouchQueue | None = None
_replug: str | None = None
_accept_uv = False
_no_reset = False
_hide_credman = False


def pytest_addoption(parser):
    group = parser.getgroup("touchstone", "Touchstone's UDP authenticator")
    group.addoption("--touchstone-port", type=int,
                    default=int(os.environ["TOUCHSTONE_FIDO_PORT"])
                    if os.environ.get("TOUCHSTONE_FIDO_PORT") else None,
                    help="UDP port of `touchstone fido serve` on 127.0.0.1 "
                    "(or $TOUCHSTONE_FIDO_PORT)")
    group.addoption("--touchstone-touch", metavar="FINGER",
                    default=os.environ.get("TOUCHSTONE_FIDO_TOUCH"),
                    help="answer touch prompts with `$TOUCHSTONE_CLI sim touch FINGER` "
                    "(or $TOUCHSTONE_FIDO_TOUCH); without it, nobody touches")
    group.addoption("--touchstone-touch-wait", type=int, default=TOUCH_WAIT_SECONDS,
                    metavar="SECONDS", help="the --wait given to `sim touch`")
    group.addoption("--touchstone-replug", metavar="COMMAND",
                    help="shell command run where the suite would unplug and replug "
                    "the authenticator (e.g. restart it); a number on its last line "
                    "of output is the new port")
    group.addoption("--touchstone-accept-uv", action="store_true",
                    help="let the suite run although getInfo says uv: true (see above)")
    group.addoption("--touchstone-hide-credman", action="store_true",
                    help="the suite sees no credential management (it would want a PIN for it)")
    group.addoption("--touchstone-no-reset", action="store_true",
                    help="never factory-reset: skip the tests that need it")
    group.addoption("--touchstone-io-timeout", type=float, default=DEFAULT_TIMEOUT,
                    metavar="SECONDS", help="longest silence on UDP")


def pytest_configure(config):
    global _touches, _replug, _accept_uv, _no_reset, _hide_credman
    port = config.getoption("touchstone_port")
    if port is None or not 0 < port < 65536:
        raise pytest.UsageError("device_suite_plugin needs --touchstone-port PORT")
    _Target.port = port
    _Target.timeout = config.getoption("touchstone_io_timeout")
    _replug = config.getoption("touchstone_replug")
    _accept_uv = config.getoption("touchstone_accept_uv")
    _no_reset = config.getoption("touchstone_no_reset")
    _hide_credman = config.getoption("touchstone_hide_credman")
    if _hide_credman:
        from fido2.ctap2.credman import CredentialManagement

        CredentialManagement.is_supported = staticmethod(lambda info: False)
    finger = config.getoption("touchstone_touch")
    if finger:
        cli = os.environ.get("TOUCHSTONE_CLI")
        if not cli:
            raise pytest.UsageError("--touchstone-touch needs TOUCHSTONE_CLI in the environment")
        _touches = TouchQueue(cli, finger, config.getoption("touchstone_touch_wait"))


def pytest_report_header(config):
    finger = config.getoption("touchstone_touch")
    return (f"touchstone: authenticator at udp:{_Target.host}:{_Target.port}; touches: "
            + (f"`sim touch {finger}`" if finger else "none")
            + ("; uv accepted" if config.getoption("touchstone_accept_uv") else "")
            + ("; no reset" if config.getoption("touchstone_no_reset") else "")
            + ("; credential management hidden" if config.getoption("touchstone_hide_credman") else ""))


def _suite_conftest():
    """The suite's tests/device/conftest.py module (imported by collection)."""
    for module in list(sys.modules.values()):
        manager = getattr(module, "DeviceManager", None)
        if (isinstance(manager, type) and manager.__module__ == getattr(module, "__name__", None)
                and hasattr(module, "Printer") and hasattr(manager, "_reconnect_usb")):
            return module
    return None


def _reconnect_udp(self):
    """Stands in for DeviceManager._reconnect_usb: the same checks, with a
    replug command instead of a person at a USB port."""
    from fido2.ctap2 import Ctap2

    info = Ctap2(self._dev).info
    self.printer.remove()
    self._dev.close()
    if _replug:
        result = subprocess.run(_replug, shell=True, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, text=True, check=False)
        if result.returncode != 0:
            raise OSError(f"--touchstone-replug command exited {result.returncode}")
        lines = result.stdout.strip().splitlines()
        if lines and lines[-1].strip().isdigit():
            _Target.port = int(lines[-1].strip())
    self.printer.insert()
    descriptor = _list_descriptors()[0]
    device = fido2.hid.CtapHidDevice(descriptor, _open_connection(descriptor))
    info2 = Ctap2(device).info
    assert replace(info, enc_identifier=None, enc_cred_store_state=None) == replace(
        info2, enc_identifier=None, enc_cred_store_state=None
    )
    return device


def pytest_collection_finish(session):
    conftest = _suite_conftest()
    if conftest is None:
        if session.items:
            pytest.exit("device_suite_plugin: python-fido2's tests/device/conftest.py "
                        "was not collected (run it on fido2-2.2.1/tests/device)", returncode=4)
        return
    printer = conftest.Printer
    original_touch = printer.touch

    def touch(self):
        original_touch(self)
        if _touches is not None:
            _touches.request()

    printer.touch = touch
    conftest.DeviceManager._reconnect_usb = _reconnect_udp
    _adjust_manager(conftest)


def _adjust_manager(conftest):
    """--touchstone-accept-uv and --touchstone-no-reset, around the suite's
    DeviceManager constructor (where its checks are)."""
    manager = conftest.DeviceManager
    original_init = manager.__init__
    real_ctap2 = conftest.Ctap2

    class UvHiddenCtap2(real_ctap2):
        """Ctap2 whose cached getInfo lacks a true `uv` option."""

        @property
        def info(self):
            info = super().info
            if not info.options.get("uv"):
                return info
            return replace(info, options={k: v for k, v in info.options.items() if k != "uv"})

    def __init__(self, *args, **kwargs):
        if _accept_uv:
            conftest.Ctap2 = UvHiddenCtap2
        try:
            original_init(self, *args, **kwargs)
        finally:
            conftest.Ctap2 = real_ctap2
        if _no_reset and self._can_reset:
            self.printer.print("touchstone: --touchstone-no-reset: the suite will not reset "
                               "the authenticator; the tests that need it are skipped")
            self._can_reset = False

    manager.__init__ = __init__


def pytest_terminal_summary(terminalreporter):
    if _touches is None:
        return
    exits = list(_touches.exits)
    failed = [code for code in exits if code != 0]
    terminalreporter.write_sep("-", "touchstone touches")
    terminalreporter.write_line(
        f"`sim touch` runs: {len(exits)}, failed: {len(failed)} {failed if failed else ''}, "
        f"still queued: {_touches.pending}"
    )


def pytest_unconfigure(config):
    if _touches is not None:
        _touches.close()
