/// `fido` (cli-contract.md, "Security keys: FIDO2 credentials in the TPM").
extension CommandTable {
    static let fido = CommandDescription(
        name: "fido",
        abstract: "List and delete the FIDO credentials kept by the TPM.",
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
        ])

    private enum FIDOArgument {
        static let id = ArgumentDescription(name: "id", help: "The credential's id (base64url), or a prefix that names one.")
    }
}
