"""bench-ssh's passkey side, run by the FIDO tests' venv Python (python-fido2
from scripts/install-deps): CTAP2 over `touchstone fido serve --udp`, driven
line by line on stdin so that bench-ssh can time from the touch.

    register      -> "ok CREDID_HEX X_HEX Y_HEX" (makeCredential, ES256, after a touch)
    assert        -> "ok AUTHDATA_HEX SIGNATURE_HEX CLIENTDATAHASH_HEX" (getAssertion with the
                     credential in the allow list, after a touch), printed as soon as it is answered
"""

import os
import secrets
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Fixtures", "fido"))

from ctap_udp import open_udp_device  # noqa: E402
from fido2.ctap2 import Ctap2  # noqa: E402
from fido2.cose import ES256  # noqa: E402

RP = "bench.touchstone.test"


def main():
    port = int(sys.argv[1])
    ctap = Ctap2(open_udp_device(port))
    credential = None
    for line in sys.stdin:
        command = line.strip()
        try:
            if command == "register":
                made = ctap.make_credential(secrets.token_bytes(32), {"id": RP, "name": "bench"},
                                            {"id": b"bench", "name": "bench"}, [{"type": "public-key", "alg": ES256.ALGORITHM}])
                data = made.auth_data.credential_data
                credential = {"type": "public-key", "id": data.credential_id}
                key = data.public_key
                print("ok", data.credential_id.hex(), key[-2].hex(), key[-3].hex(), flush=True)
            elif command == "assert":
                client_data_hash = secrets.token_bytes(32)
                got = ctap.get_assertion(RP, client_data_hash, [credential])
                print("ok", bytes(got.auth_data).hex(), got.signature.hex(), client_data_hash.hex(), flush=True)
            else:
                print("error unknown command", command, flush=True)
        except Exception as e:  # reported to bench-ssh, which stops
            print("error", type(e).__name__, str(e).replace("\n", " "), flush=True)


if __name__ == "__main__":
    main()
