"""CTAPHID over a loopback UDP port, for python-fido2 2.2.1.

`touchstone fido serve --udp 127.0.0.1:0` serves its FIDO authenticator the
way the Solo and Trezor emulators do: each datagram, in both directions, is
one 64-byte HID report (no report-id byte in front). This module gives
python-fido2 a `CtapHidConnection` over such a port, so that its
`CtapHidDevice` (the CTAPHID framing: INIT, channels, continuation packets,
keep-alives, CANCEL) and everything above it run unchanged.

    from ctap_udp import open_udp_device
    device = open_udp_device(port)          # CTAPHID INIT has run
    Ctap2(device).get_info()

Run as a script (`python ctap_udp.py --port PORT`) it opens the device, pings
it and prints what CTAPHID INIT answered, as one JSON object.
"""

from __future__ import annotations

import socket

from fido2.hid import CtapHidDevice
from fido2.hid.base import CtapHidConnection, HidDescriptor

REPORT_SIZE = 64
DEFAULT_HOST = "127.0.0.1"
# How long one read waits for a datagram. While it waits for a touch, an
# authenticator sends a KEEPALIVE at least every 100 ms (CTAP 2.1, 11.2.9.2),
# so a silence this long means it is gone or stuck, not that the user is slow.
DEFAULT_TIMEOUT = 30.0

# The descriptor is made up: there is no hidraw node behind it. The vendor and
# product ids are 0 so as not to pass for any real device.
_VID = 0x0000
_PID = 0x0000


class CtapUdpTimeout(TimeoutError):
    """No report arrived from the authenticator in time."""


class CtapUdpError(OSError):
    """The UDP transport broke its one-report-per-datagram contract."""


class UdpCtapHidConnection(CtapHidConnection):
    """One UDP socket, connected to the authenticator's port.

    Connecting the socket makes the kernel drop datagrams from anyone else,
    and turns an ICMP port-unreachable (nothing listening) into a
    ConnectionRefusedError on the next read instead of a silent wait.
    """

    def __init__(
        self,
        port: int,
        host: str = DEFAULT_HOST,
        timeout: float = DEFAULT_TIMEOUT,
        report_size: int = REPORT_SIZE,
    ):
        self.address = (host, port)
        self.timeout = timeout
        self.report_size = report_size
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.connect(self.address)
            self._sock.settimeout(timeout)
        except BaseException:
            self._sock.close()
            raise

    def write_packet(self, data: bytes) -> None:
        # python-fido2 pads every report to the descriptor's output size.
        if len(data) != self.report_size:
            raise CtapUdpError(
                f"refusing to send a {len(data)}-byte report "
                f"(reports are {self.report_size} bytes)"
            )
        sent = self._sock.send(data)
        if sent != len(data):
            raise CtapUdpError(f"sent {sent} of {len(data)} bytes of a report")

    def read_packet(self) -> bytes:
        try:
            # One byte more than a report, so that an oversized datagram
            # shows as such instead of being cut to size by recv.
            data = self._sock.recv(self.report_size + 1)
        except socket.timeout:
            raise CtapUdpTimeout(
                f"no CTAPHID report from {self.address[0]}:{self.address[1]} "
                f"within {self.timeout:g} s"
            ) from None
        if len(data) != self.report_size:
            raise CtapUdpError(
                f"received a {len(data)}-byte datagram from "
                f"{self.address[0]}:{self.address[1]} "
                f"(expected one {self.report_size}-byte report)"
            )
        return data

    def close(self) -> None:
        self._sock.close()


def udp_descriptor(
    port: int, host: str = DEFAULT_HOST, report_size: int = REPORT_SIZE
) -> HidDescriptor:
    """A HID descriptor for the UDP authenticator (made up: 64-byte reports)."""
    return HidDescriptor(
        path=f"udp:{host}:{port}",
        vid=_VID,
        pid=_PID,
        report_size_in=report_size,
        report_size_out=report_size,
        product_name="Touchstone FIDO authenticator (CTAPHID over UDP)",
        serial_number=None,
    )


def open_udp_device(
    port: int, host: str = DEFAULT_HOST, timeout: float = DEFAULT_TIMEOUT
) -> CtapHidDevice:
    """Opens the authenticator at host:port as a CtapHidDevice.

    CtapHidDevice's constructor runs CTAPHID INIT (a fresh channel). On any
    failure the socket is closed before the exception goes on.
    """
    connection = UdpCtapHidConnection(port, host, timeout)
    try:
        return CtapHidDevice(udp_descriptor(port, host), connection)
    except BaseException:
        connection.close()
        raise


def _main() -> int:
    import argparse
    import json

    from fido2.hid import CAPABILITY

    parser = argparse.ArgumentParser(
        description="Open the UDP authenticator, ping it, print CTAPHID INIT."
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()

    device = open_udp_device(args.port, args.host, args.timeout)
    try:
        message = b"touchstone ctap_udp ping " + bytes(range(100))
        echoed = device.ping(message)
        print(
            json.dumps(
                {
                    "ctaphidVersion": device.version,
                    "deviceVersion": list(device.device_version),
                    "capabilities": {
                        "wink": bool(device.capabilities & CAPABILITY.WINK),
                        "cbor": bool(device.capabilities & CAPABILITY.CBOR),
                        "nmsg": bool(device.capabilities & CAPABILITY.NMSG),
                    },
                    "pingEchoed": echoed == message,
                }
            )
        )
        return 0 if echoed == message else 1
    finally:
        device.close()


if __name__ == "__main__":
    raise SystemExit(_main())
