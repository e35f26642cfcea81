/// `fido` (cli-contract.md, "Security keys: FIDO2 credentials in the TPM").
extension CommandTable {
    static let fido = CommandDescription(
        name: "fido",
        abstract: "List, delete and serve the FIDO credentials kept by the TPM.",
        discussion: """
            A FIDO credential is an ECC P-256 key that the TPM makes and never lets out, for one \
            relying party or ssh application: OpenSSH's security keys (ecdsa-sk) through the \
            provider library libtouchstone-sk.so make them. Each signature needs a touch \
            (or the passcode, where its access allows one); a key made verify-required also \
            says the finger was verified. Exit 8: no such credential.
            """,
        subcommands: [
            CommandDescription(
                name: "list",
                abstract: "List the credentials: id, relying party, user, discoverable, access, created, signature count, state.",
                discussion: "Needs no authentication. With --json: an array of objects with those keys.",
                make: { _ in .fido(.list) }),
            CommandDescription(
                name: "delete",
                abstract: "Remove a credential (its TPM key goes with it).",
                discussion: "Needs the passcode. <id> is as 'fido list' prints it, or the start of it that names one credential.",
                arguments: [FIDOArgument.id],
                make: { invocation throws(UsageError) in .fido(.delete(id: try invocation.requiredText(FIDOArgument.id))) }),
            CommandDescription(
                name: "serve",
                abstract: "Serve a CTAP 2.1 authenticator over CTAPHID until SIGTERM.",
                discussion: """
                    --udp: one 64-byte CTAPHID report per datagram on a loopback UDP port (port 0: any \
                    free one); the port is printed on stdout. --uhid: a virtual USB HID FIDO device \
                    through /dev/uhid, which browsers and libfido2 find (the kernel's uhid module, and \
                    access to /dev/uhid: udev/70-touchstone.rules). Registrations make FIDO \
                    credentials with --access; every registration and sign-in waits for a touch, and \
                    user verification is a finger match or the passcode, asked by Touchstone itself.
                    """,
                options: [FIDOOption.udp, FIDOOption.uhid, FIDOOption.access],
                make: { invocation throws(UsageError) in
                    let udp = try invocation.optionText(FIDOOption.udp)
                    let uhid = invocation.flag(FIDOOption.uhid)
                    guard udp != nil || uhid else {
                        throw UsageError("fido serve needs a transport: --udp HOST:PORT, --uhid, or both")
                    }
                    var access = AccessControl.userPresence
                    if let spec = invocation.value(FIDOOption.access) {
                        do throws(AccessControlSyntaxError) {
                            access = try AccessControl(parsing: spec)
                        } catch {
                            throw UsageError("invalid \(FIDOOption.access.name) \(Quote.value(spec)): \(error.description)")
                        }
                        guard !access.flags.isEmpty else { throw UsageError("a FIDO credential signs only after a touch: --access cannot be none") }
                    }
                    return .fido(.serve(udp: udp, uhid: uhid, access: access))
                }),
        ])

    private enum FIDOOption {
        static let udp = OptionDescription(names: ["--udp"], valueName: "host:port", help: "Listen on this loopback UDP address (e.g. 127.0.0.1:0).")
        static let uhid = OptionDescription(names: ["--uhid"], help: "Make a virtual USB HID FIDO device through /dev/uhid.")
        static let access = OptionDescription(names: ["--access"], valueName: "spec", help: "What a new credential's signatures need.", defaultValue: "user-presence")
    }

    private enum FIDOArgument {
        static let id = ArgumentDescription(name: "id", help: "The credential's id (base64url), or a prefix that names one.")
    }
}
