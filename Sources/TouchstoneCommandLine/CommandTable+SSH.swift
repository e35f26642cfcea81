/// `ssh-key` and `ssh-agent` (cli-contract.md, "ssh keys and the agent").
extension CommandTable {
    static let sshKey = CommandDescription(
        name: "ssh-key",
        abstract: "Make, list and delete ssh keys kept by the TPM.",
        discussion: """
            An ssh key is an ECC P-256 key that the TPM makes and never lets out: \
            'touchstone ssh-agent' signs with it, after the authentication its access asks for. \
            Exit 8: no such key; 9: a key of that name exists; 10: a biometry-current-set \
            key invalidated by an enrolment change.
            """,
        subcommands: [
            CommandDescription(
                name: "create",
                abstract: "Make a new key in the TPM; its OpenSSH public key line on stdout.",
                discussion: """
                    Needs no authentication. <spec> as for 'add' (default user-presence): what \
                    each signature needs. none still keeps the key in this machine's TPM.
                    """,
                arguments: [SSHArgument.name],
                options: [SSHOption.access, SSHOption.comment],
                make: { invocation throws(UsageError) in
                    var access = AccessControl.userPresence
                    if let spec = invocation.value(SSHOption.access) {
                        do throws(AccessControlSyntaxError) {
                            access = try AccessControl(parsing: spec)
                        } catch {
                            throw UsageError("invalid \(SSHOption.access.name) \(Quote.value(spec)): \(error.description)")
                        }
                    }
                    return .sshKey(.create(name: try invocation.requiredText(SSHArgument.name), access: access,
                                           comment: try invocation.optionText(SSHOption.comment, allowEmpty: true)))
                }),
            CommandDescription(
                name: "list",
                abstract: "List the keys: name, fingerprint, access, comment, created, state.",
                discussion: "Needs no authentication. With --json: an array of objects with those keys.",
                make: { _ in .sshKey(.list) }),
            CommandDescription(
                name: "delete",
                abstract: "Remove a key (its TPM blob goes with it).",
                discussion: "Needs no authentication.",
                arguments: [SSHArgument.name],
                make: { invocation throws(UsageError) in .sshKey(.delete(name: try invocation.requiredText(SSHArgument.name))) }),
            CommandDescription(
                name: "sign",
                abstract: "Sign stdin with a key, as 'ssh-keygen -Y sign' does; the armored signature on stdout.",
                discussion: """
                    Needs what the key's access asks for. 'ssh-keygen -Y verify -n <namespace>' and git \
                    read the signature. Exit 10: a biometry-current-set key invalidated by an enrolment change.
                    """,
                arguments: [SSHArgument.name],
                options: [SSHOption.namespace, SSHOption.reason],
                make: { invocation throws(UsageError) in
                    let namespace = try invocation.optionText(SSHOption.namespace) ?? "file"
                    return .sshKey(.sign(name: try invocation.requiredText(SSHArgument.name), namespace: namespace,
                                         reason: try invocation.optionText(SSHOption.reason)))
                }),
        ])

    static let sshAgent = CommandDescription(
        name: "ssh-agent",
        abstract: "Serve the ssh keys over the OpenSSH agent protocol until SIGTERM.",
        discussion: """
            Prints 'SSH_AUTH_SOCK=<path>; export SSH_AUTH_SOCK;' on stdout, then serves: \
            each signature waits for what the key's access asks for (a touch, or the \
            passcode where it allows one: the terminal, else pinentry). The prompt names \
            the process that asked. Adding, removing and locking keys through the \
            agent are refused. SIGTERM or SIGINT: the socket is removed, exit 0.
            """,
        options: [SSHOption.socket],
        make: { invocation throws(UsageError) in .sshAgent(socket: try invocation.optionText(SSHOption.socket)) })

    private enum SSHOption {
        static let access = OptionDescription(names: ["--access"], valueName: "spec", help: "What each signature needs.", defaultValue: "user-presence")
        static let comment = OptionDescription(names: ["--comment"], valueName: "text", help: "The comment of the public key line.")
        static let namespace = OptionDescription(names: ["--namespace"], valueName: "namespace", help: "The signature's namespace (ssh-keygen's -n).", defaultValue: "file")
        static let reason = OptionDescription(names: ["--reason"], valueName: "text", help: "Why the signature is wanted, shown while waiting for a touch.")
        static let socket = OptionDescription(names: ["--socket"], valueName: "path", help: "Where to listen.", defaultValue: "$XDG_RUNTIME_DIR/touchstone/ssh-agent.sock")
    }

    private enum SSHArgument {
        static let name = ArgumentDescription(name: "name", help: "The key's name (at most 256 bytes, no control characters).")
    }
}
