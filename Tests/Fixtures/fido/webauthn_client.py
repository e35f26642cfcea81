"""A browser and a website, driving Touchstone's FIDO authenticator over UDP.

The integration tests run it with the fido venv's Python (scripts/install-deps
makes it from requirements.txt beside this file):

    fido-venv/bin/python webauthn_client.py --port PORT --state FILE \\
        [--touch FINGER [--touch-count N]] SCENARIO [ARGS]

The browser is python-fido2's Fido2Client (origin https://touchstone.test,
never a PIN; it allows built-in user verification whenever it asks). The
website is py_webauthn (RP id touchstone.test): it makes the options and
verifies every response; what it must remember between runs (user handles,
credential ids, public keys, sign counts) lives in the JSON --state file.

Scenarios:
    register --user NAME [--resident] [--uv required|preferred|discouraged]
             [--exclude] [--no-prf]
    authenticate [--user NAME] [--discoverable] [--uv ...] [--require-counter]
    prf --user NAME --salt HEX [--salt2 HEX] [--uv ...]
    info

Each prints ONE JSON object as the last line of stdout: {"ok": true, ...} or
{"ok": false, "error": "...", ...} (the authenticator or the website said no,
or the authenticator broke the protocol). Both exit 0: the scenario reached a
verdict. A harness error (bad arguments, missing state, an unexpected
exception in this script) exits 2 with the reason on stderr and nothing on
stdout. Diagnostics (prompts, tracebacks of refusals) go to stderr.

With --touch FINGER, every operation that needs a touch gets one: a thread
runs `$TOUCHSTONE_CLI sim touch FINGER --wait 60` (--touch-count times, one
after the other) while the operation runs, and the JSON reports the exit
codes.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import threading
import traceback
from typing import Any

from fido2.client import (
    ClientError,
    DefaultClientDataCollector,
    Fido2Client,
    UserInteraction,
)
from fido2.ctap import CtapError
from fido2.ctap2 import ClientPin, Ctap2, CredentialManagement
from fido2.hid import CAPABILITY, ConnectionFailure
from fido2.webauthn import (
    PublicKeyCredentialCreationOptions,
    PublicKeyCredentialRequestOptions,
)
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import generate_user_handle
from webauthn.helpers.decode_credential_public_key import (
    decode_credential_public_key,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ctap_udp import DEFAULT_TIMEOUT, open_udp_device  # noqa: E402

RP_ID = "touchstone.test"
RP_NAME = "Touchstone tests"
ORIGIN = "https://touchstone.test"
STATE_VERSION = 1
HARNESS_EXIT = 2
TOUCH_WAIT_SECONDS = 60

# What the authenticator (or the transport to it) may answer with instead of
# a result: a refusal or a fault of the authenticator, so a verdict. fido2
# raises ValueError for malformed or non-canonical CBOR from the device; the
# requests themselves are parsed by the same classes before any is sent (see
# parse_*_options), so a ValueError of ours surfaces there as a harness error.
AUTHENTICATOR_ERRORS = (ClientError, CtapError, ConnectionFailure, OSError, ValueError)
# What the website's verification may answer with: a refusal, so a verdict.
WEBSITE_ERRORS = (WebAuthnException,)


class HarnessError(Exception):
    """The test asked for something this script cannot do: exit 2."""


class Refusal(Exception):
    """A verdict of this script's own website logic (not py_webauthn's)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64u(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def log(message: str) -> None:
    print(f"webauthn_client: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- state


class State:
    """The website's memory, one JSON file:

    {"version": 1, "rpId": "touchstone.test",
     "users": {NAME: {"userHandle": B64URL,
                      "credentials": [{"credentialId": B64URL,
                                       "publicKey": B64URL (COSE_Key),
                                       "signCount": INT, ...}]}}}
    """

    def __init__(self, path: str, data: dict[str, Any]):
        self.path = path
        self.data = data

    @classmethod
    def load(cls, path: str, must_exist: bool) -> "State":
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            if must_exist:
                raise HarnessError(f"no state file {path} (register first)")
            if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
                raise HarnessError(f"the folder of the state file {path} does not exist")
            return cls(path, {"version": STATE_VERSION, "rpId": RP_ID, "users": {}})
        except (OSError, json.JSONDecodeError) as e:
            raise HarnessError(f"cannot read the state file {path}: {e}")
        if (
            not isinstance(data, dict)
            or data.get("version") != STATE_VERSION
            or data.get("rpId") != RP_ID
            or not isinstance(data.get("users"), dict)
        ):
            raise HarnessError(f"{path} is not a state file of this script")
        return cls(path, data)

    def save(self) -> None:
        temporary = f"{self.path}.tmp{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(temporary, self.path)

    def user(self, name: str) -> dict[str, Any] | None:
        return self.data["users"].get(name)

    def add_user(self, name: str) -> dict[str, Any]:
        user = {"userHandle": b64u(generate_user_handle()), "credentials": []}
        self.data["users"][name] = user
        return user

    def registered_user(self, name: str) -> dict[str, Any]:
        user = self.user(name)
        if user is None or not user["credentials"]:
            raise HarnessError(f"user {name!r} has no registered credential in {self.path}")
        return user

    def find_credential(self, credential_id: bytes):
        """(user name, credential record) for a credential id, or (None, None)."""
        wanted = b64u(credential_id)
        for name, user in self.data["users"].items():
            for credential in user["credentials"]:
                if credential["credentialId"] == wanted:
                    return name, credential
        return None, None

    def user_by_handle(self, handle: bytes) -> str | None:
        wanted = b64u(handle)
        for name, user in self.data["users"].items():
            if user["userHandle"] == wanted:
                return name
        return None


# ---------------------------------------------------------------- touches


class Toucher:
    """Runs `$TOUCHSTONE_CLI sim touch FINGER --wait 60` `count` times, one
    after the other, in a thread started before an operation; finish() joins
    it after the operation.

    A run still waiting `grace` seconds after the operation ended has nothing
    left to touch (the operation needed fewer touches, or failed before
    asking): it is terminated, and its (negative) exit code reported.
    """

    def __init__(self, cli: str, finger: str, count: int, grace: float):
        self.command = [cli, "sim", "touch", finger, "--wait", str(TOUCH_WAIT_SECONDS)]
        self.count = count
        self.grace = grace
        self.exits: list[int] = []
        self.killed = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._run, name="touch", daemon=True)
        self._failure: BaseException | None = None

    def start(self) -> "Toucher":
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for _ in range(self.count):
                with self._lock:
                    if self._stop.is_set():
                        return
                    # The CLI's stdout goes to our stderr: our stdout ends
                    # with the one JSON line.
                    self._process = subprocess.Popen(
                        self.command, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno()
                    )
                code = self._process.wait()
                self.exits.append(code)
                log(f"{' '.join(self.command[1:])} exited {code}")
                if code != 0:
                    return
        except BaseException as e:  # reported by finish(): a harness error
            self._failure = e

    def finish(self) -> dict[str, Any]:
        with self._lock:
            self._stop.set()
        self._thread.join(self.grace)
        if self._thread.is_alive():
            with self._lock:
                process = self._process
            if process is not None and process.poll() is None:
                log(f"terminating {' '.join(self.command[1:])} (pid {process.pid}): "
                    "the operation is over")
                self.killed = True
                process.terminate()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
            self._thread.join()
        if self._failure is not None:
            raise HarnessError(f"cannot run {self.command[0]}: {self._failure}")
        first_failure = next((code for code in self.exits if code != 0), 0)
        return {
            "touchExit": first_failure if self.exits else None,
            "touchExits": list(self.exits),
            "touchKilled": self.killed,
        }


NO_TOUCH = {"touchExit": None, "touchExits": [], "touchKilled": False}


def touched(args, operation):
    """Runs operation() with touches delivered when --touch was given.

    Returns (result or None, exception or None, touch report); the exception
    is one of AUTHENTICATOR_ERRORS.
    """
    toucher = None
    if args.touch:
        toucher = Toucher(args.touchstone_cli, args.touch, args.touch_count, args.touch_grace)
        toucher.start()
    result, error = None, None
    try:
        result = operation()
    except AUTHENTICATOR_ERRORS as e:
        error = e
    finally:
        report = toucher.finish() if toucher else dict(NO_TOUCH)
    return result, error, report


# ---------------------------------------------------------------- browser


class Interaction(UserInteraction):
    """Never a PIN; built-in user verification always allowed. Counts the
    prompts, which show what the authenticator and python-fido2 asked for."""

    def __init__(self):
        self.prompts = {"up": 0, "uv": 0, "pin": 0}

    def prompt_up(self) -> None:
        self.prompts["up"] += 1
        log("the authenticator waits for a touch (keep-alive UPNEEDED)")

    def request_pin(self, permissions, rp_id):
        self.prompts["pin"] += 1
        log(f"python-fido2 asks for a PIN (permissions {permissions!r}): none given")
        return None

    def request_uv(self, permissions, rp_id):
        self.prompts["uv"] += 1
        log(f"python-fido2 asks to use built-in user verification ({permissions!r}): yes")
        return True


class Browser:
    def __init__(self, args):
        self.device = open_udp_device(args.port, timeout=args.io_timeout)
        try:
            # Ctap2 first, strictly (canonical CBOR): Fido2Client would
            # silently fall back to U2F (CTAP1) if getInfo failed there.
            self.ctap2 = Ctap2(self.device)
            self.interaction = Interaction()
            self.client = Fido2Client(
                self.device,
                client_data_collector=DefaultClientDataCollector(origin=ORIGIN),
                user_interaction=self.interaction,
            )
        except BaseException:
            self.device.close()
            raise

    def close(self) -> None:
        self.device.close()


def open_browser(args):
    """(Browser, None) or (None, verdict) when the authenticator cannot be
    opened: nothing answering, a broken CTAPHID INIT or getInfo."""
    try:
        return Browser(args), None
    except AUTHENTICATOR_ERRORS as e:
        return None, refusal(e, stage="open")


# ---------------------------------------------------------------- verdicts


def ctap_name(code) -> str:
    return code.name if isinstance(code, CtapError.ERR) else f"UNKNOWN_0x{int(code):02X}"


def refusal(error: BaseException, stage: str) -> dict[str, Any]:
    """The JSON of an ok:false verdict; the traceback goes to stderr."""
    log(f"{stage}: {type(error).__name__}: {error!r}")
    traceback.print_exception(error, file=sys.stderr)
    verdict: dict[str, Any] = {
        "ok": False,
        "stage": stage,
        "errorType": type(error).__name__,
        "clientError": None,
        "ctapError": None,
        "ctapCode": None,
    }
    if isinstance(error, ClientError):
        verdict["clientError"] = error.code.name
        cause = error.cause
        if isinstance(cause, CtapError):
            verdict["ctapError"] = ctap_name(cause.code)
            verdict["ctapCode"] = int(cause.code)
            verdict["error"] = f"{type(error).__name__} {error.code.name} (CtapError {ctap_name(cause.code)})"
        elif cause is not None:
            verdict["error"] = f"{type(error).__name__} {error.code.name} ({cause})"
        else:
            verdict["error"] = f"{type(error).__name__} {error.code.name}"
    elif isinstance(error, CtapError):
        verdict["ctapError"] = ctap_name(error.code)
        verdict["ctapCode"] = int(error.code)
        verdict["error"] = f"CtapError {ctap_name(error.code)}"
    elif isinstance(error, Refusal):
        verdict["errorType"] = error.kind
        verdict["error"] = f"{error.kind}: {error}"
    else:
        verdict["error"] = f"{type(error).__name__}: {error}"
    return verdict


def uv_requirement(value: str) -> UserVerificationRequirement:
    return UserVerificationRequirement(value)


def parse_creation_options(public_key: dict) -> None:
    try:
        PublicKeyCredentialCreationOptions.from_dict(public_key)
    except Exception as e:
        raise HarnessError(f"python-fido2 cannot read our creation options: {e}")


def parse_request_options(public_key: dict) -> None:
    try:
        PublicKeyCredentialRequestOptions.from_dict(public_key)
    except Exception as e:
        raise HarnessError(f"python-fido2 cannot read our request options: {e}")


def response_json(response) -> dict:
    """A python-fido2 RegistrationResponse/AuthenticationResponse as the JSON
    a browser hands to the website (base64url strings)."""
    return json.loads(json.dumps(dict(response), default=dict))


def text(value) -> str:
    """An enum member's value (py_webauthn returns some as plain strings)."""
    return str(getattr(value, "value", value))


def flags_of(auth_data) -> dict[str, bool]:
    return {
        "userPresent": auth_data.is_user_present(),
        "userVerified": auth_data.is_user_verified(),
    }


# ---------------------------------------------------------------- scenarios


def scenario_register(args, state: State) -> dict[str, Any]:
    user = state.user(args.user)
    excluded: list[dict[str, Any]] = []
    if args.exclude:
        excluded = state.registered_user(args.user)["credentials"]
    if user is None:
        user = state.add_user(args.user)
    uv = uv_requirement(args.uv)
    options = generate_registration_options(
        rp_id=RP_ID,
        rp_name=RP_NAME,
        user_name=args.user,
        user_id=unb64u(user["userHandle"]),
        user_display_name=args.user,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=(
                ResidentKeyRequirement.REQUIRED if args.resident else ResidentKeyRequirement.DISCOURAGED
            ),
            user_verification=uv,
        ),
        exclude_credentials=[
            PublicKeyCredentialDescriptor(id=unb64u(c["credentialId"])) for c in excluded
        ],
        timeout=args.ceremony_timeout * 1000,
    )
    public_key = json.loads(options_to_json(options))
    extensions: dict[str, Any] = {"credProps": True}
    if not args.no_prf:
        # What a website that wants PRF later asks for: hmac-secret on the
        # credential (python-fido2 sends it only when getInfo lists it).
        extensions["prf"] = {}
    public_key["extensions"] = extensions
    parse_creation_options(public_key)

    browser, verdict = open_browser(args)
    if verdict:
        return {**verdict, **NO_TOUCH}
    try:
        response, error, touch = touched(args, lambda: browser.client.make_credential(public_key))
        common = {"user": args.user, "excluded": [c["credentialId"] for c in excluded],
                  "prompts": browser.interaction.prompts, **touch}
        if error is not None:
            return {**refusal(error, "authenticator"), **common}
        attestation = response.response.attestation_object
        try:
            verified = verify_registration_response(
                credential=response_json(response),
                expected_challenge=options.challenge,
                expected_rp_id=RP_ID,
                expected_origin=ORIGIN,
                require_user_verification=(uv == UserVerificationRequirement.REQUIRED),
            )
        except WEBSITE_ERRORS as e:
            return {**refusal(e, "website"), **common}
    finally:
        browser.close()

    results = response.client_extension_results
    prf_enabled = results.prf.enabled if results.prf is not None else None
    rk = results.cred_props.rk if results.cred_props is not None else None
    record = {
        "credentialId": b64u(verified.credential_id),
        "publicKey": b64u(verified.credential_public_key),
        "signCount": verified.sign_count,
        "residentKey": rk,
        "userVerified": verified.user_verified,
        "aaguid": verified.aaguid,
        "fmt": text(verified.fmt),
        "prfEnabled": prf_enabled,
    }
    user["credentials"].append(record)
    state.save()
    return {
        "ok": True,
        "userHandle": user["userHandle"],
        "credentialId": record["credentialId"],
        "publicKeyAlg": decode_credential_public_key(verified.credential_public_key).alg,
        "signCount": verified.sign_count,
        **flags_of(attestation.auth_data),
        "userVerified": verified.user_verified,
        "aaguid": verified.aaguid,
        "fmt": record["fmt"],
        "residentKey": rk,
        "backedUp": verified.credential_backed_up,
        "deviceType": text(verified.credential_device_type),
        "prfEnabled": prf_enabled,
        **common,
    }


def _get(args, state: State, user_name: str | None, discoverable: bool,
         prf_salts: tuple[bytes, bytes | None] | None) -> dict[str, Any]:
    """An authentication ceremony; with prf_salts, a PRF evaluation too."""
    expected_user = state.registered_user(user_name) if user_name else None
    allow = [] if discoverable else expected_user["credentials"]
    uv = uv_requirement(args.uv)
    options = generate_authentication_options(
        rp_id=RP_ID,
        allow_credentials=[PublicKeyCredentialDescriptor(id=unb64u(c["credentialId"])) for c in allow],
        user_verification=uv,
        timeout=args.ceremony_timeout * 1000,
    )
    public_key = json.loads(options_to_json(options))
    if prf_salts:
        values = {"first": b64u(prf_salts[0])}
        if prf_salts[1] is not None:
            values["second"] = b64u(prf_salts[1])
        public_key["extensions"] = {"prf": {"eval": values}}
    parse_request_options(public_key)

    browser, verdict = open_browser(args)
    if verdict:
        return {**verdict, **NO_TOUCH}
    try:
        info = browser.ctap2.info
        if prf_salts:
            # python-fido2 leaves the extension out, silently, when either is
            # missing: say so instead of waiting for an output never asked for.
            common = {"hmacSecretAdvertised": "hmac-secret" in info.extensions,
                      "pinUvAuthProtocols": list(info.pin_uv_protocols)}
            if "hmac-secret" not in info.extensions:
                return {**refusal(Refusal("PrfUnsupported",
                        "getInfo does not list the hmac-secret extension"), "authenticator"),
                        **common, **NO_TOUCH}
            if not {1, 2} & set(info.pin_uv_protocols):
                return {**refusal(Refusal("PrfUnsupported",
                        "getInfo lists no pinUvAuthProtocol python-fido2 speaks (1 or 2); "
                        "hmac-secret needs one for its key agreement"), "authenticator"),
                        **common, **NO_TOUCH}
        else:
            common = {}
        selection, error, touch = touched(args, lambda: browser.client.get_assertion(public_key))
        common.update({"prompts": browser.interaction.prompts, **touch})
        if error is not None:
            return {**refusal(error, "authenticator"), **common}
        try:
            assertions = selection.get_assertions()
            common["assertionCount"] = len(assertions)
            common["assertionUsers"] = [
                state.user_by_handle(a.user["id"]) if a.user and "id" in a.user else None
                for a in assertions
            ]
            # The account the user picks, when the authenticator offers
            # several: the expected user's, else the first the site knows.
            known = [state.find_credential(a.credential["id"])[1] is not None
                     if a.credential else False for a in assertions]
            index = known.index(True) if True in known else 0
            if discoverable and expected_user is not None:
                handles = [a.user.get("id") if a.user else None for a in assertions]
                wanted = unb64u(expected_user["userHandle"])
                if wanted not in handles:
                    raise Refusal("WrongUser", f"no assertion for {user_name!r} among "
                                  f"{len(assertions)} from the authenticator")
                index = handles.index(wanted)
            response = selection.get_response(index)
        except AUTHENTICATOR_ERRORS as e:
            return {**refusal(e, "authenticator"), **common}
        except Refusal as e:
            return {**refusal(e, "website"), **common}
    finally:
        browser.close()

    try:
        owner, credential = state.find_credential(response.raw_id)
        if credential is None:
            raise Refusal("UnknownCredential",
                          f"credential {b64u(response.raw_id)} is not registered here")
        if user_name is not None and owner != user_name:
            raise Refusal("WrongUser", f"credential of {owner!r}, not {user_name!r}")
        handle = response.response.user_handle
        if discoverable and handle is None:
            raise Refusal("MissingUserHandle", "a discoverable assertion without userHandle")
        if handle is not None and b64u(handle) != state.user(owner)["userHandle"]:
            raise Refusal("UserHandleMismatch",
                          f"userHandle {b64u(handle)} is not {owner!r}'s")
        previous = credential["signCount"]
        verified = verify_authentication_response(
            credential=response_json(response),
            expected_challenge=options.challenge,
            expected_rp_id=RP_ID,
            expected_origin=ORIGIN,
            credential_public_key=unb64u(credential["publicKey"]),
            credential_current_sign_count=previous,
            require_user_verification=(uv == UserVerificationRequirement.REQUIRED),
        )
        # py_webauthn lets a count of 0 stay 0 (an authenticator without a
        # counter); --require-counter does not.
        if args.require_counter and verified.new_sign_count <= previous:
            raise Refusal("SignCountNotIncreased",
                          f"sign count {verified.new_sign_count} after {previous}")
    except Refusal as e:
        return {**refusal(e, "website"), **common}
    except WEBSITE_ERRORS as e:
        return {**refusal(e, "website"), **common}

    credential["signCount"] = verified.new_sign_count
    state.save()
    verdict = {
        "ok": True,
        "user": owner,
        "userHandle": b64u(handle) if handle is not None else None,
        "credentialId": credential["credentialId"],
        **flags_of(response.response.authenticator_data),
        "userVerified": verified.user_verified,
        "signCount": verified.new_sign_count,
        "previousSignCount": previous,
        "signCountIncreased": verified.new_sign_count > previous,
        "backedUp": verified.credential_backed_up,
        "deviceType": text(verified.credential_device_type),
        **common,
    }
    if prf_salts:
        prf = response.client_extension_results.prf
        results = prf.results if prf is not None else None
        if results is None:
            # The assertion itself was good (and its count is recorded).
            failure = refusal(Refusal(
                "NoPrfOutput",
                "the assertion carries no hmac-secret output (was the credential "
                "registered with hmac-secret? see register's prfEnabled)"), "authenticator")
            return {**verdict, **failure}
        verdict["first"] = results.first.hex()
        verdict["second"] = results.second.hex() if results.second else None
    return verdict


def scenario_authenticate(args, state: State) -> dict[str, Any]:
    if not args.discoverable and not args.user:
        raise HarnessError("authenticate needs --user NAME, --discoverable, or both")
    return _get(args, state, args.user, args.discoverable, None)


def parse_hex(option: str, value: str | None) -> bytes | None:
    if value is None:
        return None
    try:
        data = bytes.fromhex(value)
    except ValueError:
        raise HarnessError(f"{option} needs hexadecimal bytes, not {value!r}")
    if not data:
        raise HarnessError(f"{option} is empty")
    return data


def scenario_prf(args, state: State) -> dict[str, Any]:
    salts = (parse_hex("--salt", args.salt), parse_hex("--salt2", args.salt2))
    return _get(args, state, args.user, False, salts)


def scenario_info(args, state: State | None) -> dict[str, Any]:
    browser, verdict = open_browser(args)
    if verdict:
        return {**verdict, **NO_TOUCH}
    try:
        device = browser.device
        info = browser.ctap2.info
    finally:
        browser.close()
    return {
        "ok": True,
        "versions": list(info.versions),
        "extensions": list(info.extensions),
        "aaguid": str(info.aaguid),
        "options": dict(info.options),
        "maxMsgSize": info.max_msg_size,
        "pinUvAuthProtocols": list(info.pin_uv_protocols),
        "maxCredentialCountInList": info.max_creds_in_list,
        "maxCredentialIdLength": info.max_cred_id_length,
        "transports": list(info.transports),
        "algorithms": [dict(a) for a in info.algorithms],
        "firmwareVersion": info.firmware_version,
        "remainingDiscoverableCredentials": info.remaining_disc_creds,
        "attestationFormats": list(info.attestation_formats),
        "longTouchForReset": info.long_touch_for_reset,
        "transportsForReset": list(info.transports_for_reset),
        "uvModality": info.uv_modality,
        "ctaphid": {
            "version": device.version,
            "deviceVersion": list(device.device_version),
            "wink": bool(device.capabilities & CAPABILITY.WINK),
            "cbor": bool(device.capabilities & CAPABILITY.CBOR),
            "nmsg": bool(device.capabilities & CAPABILITY.NMSG),
        },
        **NO_TOUCH,
    }


def scenario_credman(args, state: State | None) -> dict[str, Any]:
    """Credential management as a platform's settings page does it: a
    token for credential management through built-in UV (a touch), the
    metadata, every relying party and its discoverable credentials, and
    with --delete ID (base64url) that credential deleted (another touch),
    then listed again."""
    browser, verdict = open_browser(args)
    if verdict:
        return {**verdict, **NO_TOUCH}

    def listing(manager):
        metadata = manager.get_metadata()
        parties = []
        try:
            rps = manager.enumerate_rps()
        except CtapError as e:
            if e.code != CtapError.ERR.NO_CREDENTIALS:
                raise
            rps = []
        for rp in rps:
            rp_id = rp[CredentialManagement.RESULT.RP]["id"]
            creds = manager.enumerate_creds(rp[CredentialManagement.RESULT.RP_ID_HASH])
            parties.append({
                "rp": rp_id,
                "credentials": [{
                    "credentialId": b64u(c[CredentialManagement.RESULT.CREDENTIAL_ID]["id"]),
                    "user": c[CredentialManagement.RESULT.USER].get("name"),
                    "credProtect": c.get(CredentialManagement.RESULT.CRED_PROTECT),
                } for c in creds],
            })
        return {"existing": metadata[CredentialManagement.RESULT.EXISTING_CRED_COUNT],
                "remaining": metadata[CredentialManagement.RESULT.MAX_REMAINING_COUNT], "parties": parties}

    def operation():
        pin = ClientPin(browser.ctap2)
        token = pin.get_uv_token(ClientPin.PERMISSION.CREDENTIAL_MGMT)
        manager = CredentialManagement(browser.ctap2, pin.protocol, token)
        before = listing(manager)
        after = None
        if args.delete:
            manager.delete_cred({"id": unb64u(args.delete), "type": "public-key"})
            after = listing(manager)
        if args.rename:
            # updateUserInformation: the credential's user handle, a new name.
            credential_id, name = args.rename.split("=", 1)
            handle = next(c[CredentialManagement.RESULT.USER]["id"]
                          for rp in manager.enumerate_rps()
                          for c in manager.enumerate_creds(rp[CredentialManagement.RESULT.RP_ID_HASH])
                          if c[CredentialManagement.RESULT.CREDENTIAL_ID]["id"] == unb64u(credential_id))
            manager.update_user_info({"id": unb64u(credential_id), "type": "public-key"},
                                     {"id": handle, "name": name, "displayName": name})
            after = listing(manager)
        return before, after

    try:
        result, error, touches = touched(args, operation)
    finally:
        browser.close()
    if error is not None:
        return {**refusal(error, stage="authenticator"), **touches}
    before, after = result
    return {"ok": True, "before": before, "after": after, **touches}


def scenario_reset(args, state: State | None) -> dict[str, Any]:
    """authenticatorReset, as a platform's "reset this security key"."""
    browser, verdict = open_browser(args)
    if verdict:
        return {**verdict, **NO_TOUCH}
    try:
        result, error, touches = touched(args, lambda: browser.ctap2.reset())
    finally:
        browser.close()
    if error is not None:
        return {**refusal(error, stage="authenticator"), **touches}
    return {"ok": True, **touches}


# ---------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    # The options every scenario takes are accepted before or after the
    # scenario's name; after it, they default to SUPPRESS so as not to
    # overwrite what was given before it.
    def common(parser, defaults: bool):
        def default(value):
            return value if defaults else argparse.SUPPRESS

        parser.add_argument("--port", type=int, default=default(None),
                            help="the authenticator's UDP port on 127.0.0.1")
        parser.add_argument("--state", default=default(None),
                            help="the website's JSON state file")
        parser.add_argument("--touch", metavar="FINGER", default=default(None),
                            help="deliver touches with `$TOUCHSTONE_CLI sim touch FINGER`")
        parser.add_argument("--touch-count", type=int, metavar="N", default=default(1),
                            help="touches per operation (sequential `sim touch` runs)")
        parser.add_argument("--touch-grace", type=float, metavar="SECONDS", default=default(10.0),
                            help="how long a `sim touch` may run on after the operation")
        parser.add_argument("--io-timeout", type=float, metavar="SECONDS",
                            default=default(DEFAULT_TIMEOUT),
                            help="longest silence from the authenticator on UDP")
        parser.add_argument("--ceremony-timeout", type=int, metavar="SECONDS", default=default(60),
                            help="the WebAuthn timeout (python-fido2 cancels after it)")

    parser = argparse.ArgumentParser(
        prog="webauthn_client.py",
        description="A browser (python-fido2) and a website (py_webauthn) "
        "against Touchstone's FIDO authenticator over UDP.",
    )
    common(parser, True)
    scenarios = parser.add_subparsers(dest="scenario", required=True, metavar="SCENARIO")
    uv_choices = [u.value for u in UserVerificationRequirement]

    register = scenarios.add_parser("register", help="create a credential and verify it")
    common(register, False)
    register.add_argument("--user", required=True)
    register.add_argument("--resident", action="store_true",
                          help="residentKey required (a discoverable credential)")
    register.add_argument("--uv", choices=uv_choices, default="preferred")
    register.add_argument("--exclude", action="store_true",
                          help="the user's registered credentials in excludeCredentials")
    register.add_argument("--no-prf", action="store_true",
                          help="do not ask for PRF (hmac-secret) on the credential")

    authenticate = scenarios.add_parser("authenticate", help="get an assertion and verify it")
    common(authenticate, False)
    authenticate.add_argument("--user", help="the user expected (allowCredentials from the state)")
    authenticate.add_argument("--discoverable", action="store_true",
                              help="no allowCredentials: the authenticator picks")
    authenticate.add_argument("--uv", choices=uv_choices, default="preferred")
    authenticate.add_argument("--require-counter", action="store_true",
                              help="refuse unless the sign count increased (also from 0)")

    prf = scenarios.add_parser("prf", help="evaluate PRF (hmac-secret) in an assertion")
    common(prf, False)
    prf.add_argument("--user", required=True)
    prf.add_argument("--salt", required=True, metavar="HEX", help="PRF input `first`")
    prf.add_argument("--salt2", metavar="HEX", help="PRF input `second`")
    prf.add_argument("--uv", choices=uv_choices, default="preferred")
    prf.add_argument("--require-counter", action="store_true")

    info = scenarios.add_parser("info", help="the authenticator's getInfo as JSON")
    common(info, False)

    reset = scenarios.add_parser("reset", help="authenticatorReset")
    common(reset, False)

    credman = scenarios.add_parser("credman", help="credential management: list, and delete one")
    common(credman, False)
    credman.add_argument("--delete", metavar="ID", help="the credential (base64url) to delete")
    credman.add_argument("--rename", metavar="ID=NAME", help="the credential (base64url) whose user gets NAME (updateUserInformation)")
    return parser


SCENARIOS = {
    "register": scenario_register,
    "authenticate": scenario_authenticate,
    "prf": scenario_prf,
    "info": scenario_info,
    "credman": scenario_credman,
    "reset": scenario_reset,
}


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.port is None or not 0 < args.port < 65536:
            raise HarnessError("--port PORT (1-65535) is required")
        if args.state is None and args.scenario not in ("info", "credman", "reset"):
            raise HarnessError("--state FILE is required")
        if args.touch_count < 1:
            raise HarnessError("--touch-count must be at least 1")
        args.touchstone_cli = None
        if args.touch:
            args.touchstone_cli = os.environ.get("TOUCHSTONE_CLI")
            if not args.touchstone_cli:
                raise HarnessError("--touch needs TOUCHSTONE_CLI in the environment")
        state = None
        if args.scenario not in ("info", "credman", "reset"):  # they read no state
            state = State.load(args.state, must_exist=args.scenario != "register")
        result = SCENARIOS[args.scenario](args, state)
    except HarnessError as e:
        print(f"webauthn_client: error: {e}", file=sys.stderr)
        return HARNESS_EXIT
    except Exception:
        print("webauthn_client: harness bug:", file=sys.stderr)
        traceback.print_exc()
        return HARNESS_EXIT
    result = {"scenario": args.scenario, **result}
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
