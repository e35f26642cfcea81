/// Every `touchstone` command: the one table from which the parser takes
/// names, arguments and options, and the help takes its text.
enum CommandTable {
    /// `touchstone` itself, whose subcommands are the commands.
    static let root = CommandDescription(
        name: "touchstone",
        abstract: "Touchstone: fingerprint- and TPM-protected secrets for Linux.",
        discussion: """
            Keeps secrets the way the Keychain does on Apple platforms: each item is \
            sealed to this machine's TPM and opens only after the authentication it \
            was stored with (a touch of an enrolled finger, the passcode, or both). \
            Secrets never travel in arguments or environment variables: only stdin, \
            a file descriptor or the terminal (no echo).
            """,
        subcommands: [
            status, passcode, enroll, unenroll, fingers, verify, matching,
            add, get, update, delete, list, importVault, secretService, sshKey, sshAgent, fido, doctor, sim, demo, help,
        ])

    // MARK: Reader, TPM and passcode

    static let status = CommandDescription(
        name: "status",
        abstract: "Show the reader, the TPM, the passcode, enrolled fingers, lockout and item count.",
        discussion: "Needs no authentication and never prompts.",
        make: { _ in .status })

    static let passcode = CommandDescription(
        name: "passcode",
        abstract: "Set, change or remove the passcode.",
        subcommands: [
            CommandDescription(
                name: "set",
                abstract: "Set the first passcode.",
                discussion: "Needs no authentication; refused (exit 1) if a passcode is already set.",
                make: { _ in .passcode(.set) }),
            CommandDescription(
                name: "change",
                abstract: "Replace the passcode.",
                discussion: "Needs the current passcode. With --passcode-fd, line 1 is the current passcode and line 2 the new one.",
                make: { _ in .passcode(.change) }),
            CommandDescription(
                name: "remove",
                abstract: "Remove the passcode.",
                discussion: """
                    Needs the passcode. Every finger is unenrolled and every item that needs \
                    the passcode or biometry becomes unusable, hence --yes.
                    """,
                options: [Option.yes],
                make: { invocation throws(UsageError) in
                    guard invocation.flag(Option.yes) else {
                        throw UsageError("'passcode remove' unenrols every finger and makes every item that needs the passcode or biometry unusable; add --yes to confirm")
                    }
                    return .passcode(.remove)
                }),
        ])

    static let importVault = CommandDescription(
        name: "import",
        abstract: "Move the embedded vault into the daemon, or every secret of another Secret Service into this vault.",
        discussion: """
            Without --from-secret-service: needs the vault's passcode, and a daemon \
            (--daemon PATH, or its socket) that holds no vault for you yet. Moves the \
            passcode, the enrolled fingers and every item that still opens, with its \
            attributes and access control; items no way opens any more are listed and \
            left. Then the embedded vault is made read-only (it still lists and opens \
            with --embedded), or removed with --remove.

            With --from-secret-service: reads every collection and item of the Secret \
            Service running on the session bus (gnome-keyring, KeePassXC, ...; run it \
            before 'touchstone secret-service --replace'), unlocking its locked \
            collections through that provider's own prompt, and adds each item to a \
            collection of the same name here with its label, attributes, secret, content \
            type and times; the new items get --access (default none). Nothing in the \
            source changes. Again, it adds nothing twice. It says how many items it \
            found, added, skipped and failed (with why); exit 0 only when none failed. \
            --dry-run reads everything and adds nothing. With --json: one object with \
            found, added, skipped, failed, collectionsMade, defaultAlias and dryRun.
            """,
        options: [Option.remove, Option.fromSecretService, Option.importAccess, Option.dryRun],
        make: { invocation throws(UsageError) in
            guard invocation.flag(Option.fromSecretService) else {
                if invocation.value(Option.importAccess) != nil || invocation.flag(Option.dryRun) {
                    throw UsageError("--access and --dry-run go with --from-secret-service")
                }
                return .importVault(remove: invocation.flag(Option.remove))
            }
            if invocation.flag(Option.remove) { throw UsageError("--remove moves the embedded vault: not with --from-secret-service") }
            return .importSecretService(access: try access(invocation, Option.importAccess) ?? AccessControl.none,
                                        dryRun: invocation.flag(Option.dryRun))
        })

    static let secretService = CommandDescription(
        name: "secret-service",
        abstract: "Provide org.freedesktop.secrets on the session bus until SIGTERM or SIGINT.",
        discussion: """
            Apps that keep secrets through the Secret Service (secret-tool, browsers, \
            git-credential-libsecret, Python's keyring) then keep them in this vault. \
            Items that clients create get the access of --access (default none); an \
            item whose access needs authentication is reported locked, and a \
            client's Unlock prompts for the touch (or the passcode, through \
            pinentry). The attributes service and account are the item's service and \
            account as the other commands see them. Exit 1 when another program \
            owns the name and --replace is not given.
            """,
        options: [Option.replace, Option.clientAccess],
        make: { invocation throws(UsageError) in
            .secretService(replace: invocation.flag(Option.replace),
                           access: try access(invocation, Option.clientAccess) ?? AccessControl.none)
        })

    /// The access control of --access (`option`), nil when not given.
    static func access(_ invocation: Invocation, _ option: OptionDescription) throws(UsageError) -> AccessControl? {
        guard let spec = invocation.value(option) else { return nil }
        do throws(AccessControlSyntaxError) {
            return try AccessControl(parsing: spec)
        } catch {
            throw UsageError("invalid \(option.name) \(Quote.value(spec)): \(error.description)")
        }
    }

    static let enroll = CommandDescription(
        name: "enroll",
        abstract: "Enrol a finger.",
        discussion: """
            Needs the passcode (exit 7 if none is set). Stage progress and the \
            reader's retry hints go to stderr.
            """,
        arguments: [Argument.finger],
        make: { invocation throws(UsageError) in
            .enroll(try finger(invocation.value(Argument.finger)) ?? .default)
        })

    static let unenroll = CommandDescription(
        name: "unenroll",
        abstract: "Remove one enrolled finger, or all of them.",
        discussion: "Needs the passcode.",
        arguments: [Argument.finger],
        options: [Option.all],
        synopsis: "<finger> | --all",
        make: { invocation throws(UsageError) in
            switch (try finger(invocation.value(Argument.finger)), invocation.flag(Option.all)) {
            case (let named?, false): return .unenroll(.finger(named))
            case (nil, true): return .unenroll(.all)
            case (_?, true): throw UsageError("give a finger or --all, not both")
            case (nil, false): throw UsageError("missing argument '<finger>' (or --all)")
            }
        })

    static let fingers = CommandDescription(
        name: "fingers",
        abstract: "List the enrolled fingers.",
        discussion: "Needs no authentication. With --json: an array of finger names.",
        make: { _ in .fingers })

    static let verify = CommandDescription(
        name: "verify",
        abstract: "Authenticate once: a finger, or a finger then the passcode.",
        options: [Option.allowPasscode],
        make: { invocation in .verify(allowPasscode: invocation.flag(Option.allowPasscode)) })

    static let matching = CommandDescription(
        name: "matching",
        abstract: "Show or set how many matching touches a biometric authentication takes.",
        discussion: """
            1 (the default): one touch that libfprint matches, as fprintd does. 2: a \
            second touch of the same finger must match too, for every biometric \
            authentication (items, ssh keys, verify): fewer strangers' fingers \
            match, at the cost of more refusals of yours (docs/fingerprint.md has \
            the measured rates). Showing needs nothing; setting needs the passcode. \
            With --json: {"touches": N}.
            """,
        options: [Option.touches],
        make: { invocation throws(UsageError) in
            .matching(touches: try invocation.value(Option.touches).map { value throws(UsageError) in
                try NumberRules.whole(value, Option.touches.name, in: 1...2)
            })
        })

    // MARK: Items

    /// The two arguments that name an item.
    private static let itemArguments = [Argument.service, Argument.account]

    static let add = CommandDescription(
        name: "add",
        abstract: "Store a secret read from stdin.",
        discussion: """
            The secret is every byte read from stdin up to EOF: 1 byte to 1 MiB, any \
            bytes. Needs no authentication (as SecItemAdd); exit 9 if the item exists.

            <spec> is one of none, user-presence, biometry-any, biometry-current-set, \
            passcode, or several joined all by '|' (any one suffices) or all by '&' \
            (all are needed). user-presence means biometry-any|passcode. none still \
            seals to this machine's TPM.
            """,
        arguments: itemArguments,
        options: [Option.access, Option.label, Option.comment],
        make: { invocation throws(UsageError) in
            let access = try access(invocation, Option.access) ?? .userPresence
            return .add(service: try invocation.requiredText(Argument.service),
                        account: try invocation.requiredText(Argument.account),
                        access: access,
                        label: try invocation.optionText(Option.label, allowEmpty: true),
                        comment: try invocation.optionText(Option.comment, allowEmpty: true))
        })

    static let get = CommandDescription(
        name: "get",
        abstract: "Write a secret's bytes to stdout, exactly.",
        discussion: "Needs whatever the item's access asks for.",
        arguments: itemArguments,
        options: [Option.reason],
        make: { invocation throws(UsageError) in
            .get(service: try invocation.requiredText(Argument.service),
                 account: try invocation.requiredText(Argument.account),
                 reason: try invocation.optionText(Option.reason))
        })

    static let update = CommandDescription(
        name: "update",
        abstract: "Replace a secret with the bytes read from stdin.",
        discussion: "Needs whatever the item's access asks for. Stdin carries the secret, so --passcode-fd cannot be 0.",
        arguments: itemArguments,
        make: { invocation throws(UsageError) in
            .update(service: try invocation.requiredText(Argument.service), account: try invocation.requiredText(Argument.account))
        })

    static let delete = CommandDescription(
        name: "delete",
        abstract: "Remove an item.",
        discussion: "Needs no authentication (as SecItemDelete).",
        arguments: itemArguments,
        make: { invocation throws(UsageError) in
            .delete(service: try invocation.requiredText(Argument.service), account: try invocation.requiredText(Argument.account))
        })

    static let list = CommandDescription(
        name: "list",
        abstract: "List items' metadata, never their secrets.",
        discussion: """
            Shows service, account, label, comment, access, created, modified and \
            state (ok or invalidated). Needs no authentication.
            """,
        options: [Option.service],
        make: { invocation throws(UsageError) in .list(service: try invocation.optionText(Option.service)) })

    // MARK: Simulator

    static let sim = CommandDescription(
        name: "sim",
        abstract: "Run the simulator: a private swtpm and a virtual fingerprint reader.",
        discussion: """
            The simulator's state lives under $TOUCHSTONE_HOME/sim/. Commands run \
            with --sim use it; these subcommands drive it, for example from a second \
            terminal.
            """,
        subcommands: [
            CommandDescription(
                name: "start",
                abstract: "Start the simulator's swtpm.",
                discussion: """
                    --reader-kind chooses libfprint's virtual reader: device (the default: a \
                    finger is an id string), storage (prints kept on the reader, as \
                    match-on-chip readers do) or image (libfprint's image pipeline, as image \
                    sensors use: a touch is a synthetic fingerprint image). With --daemon, \
                    also a touchstoned on the simulator, as this user, on \
                    $TOUCHSTONE_HOME/sim/daemon.sock (its log: sim/daemon.log): commands run \
                    with --sim then go through it. With --fido, also 'touchstone fido serve --udp \
                    127.0.0.1:0' on the simulator (through its touchstoned when --daemon is \
                    given too): its port in 'sim status' (--json: fidoPort), its log in \
                    sim/fido.log. 'sim stop' stops them too.
                    """,
                options: [Option.readerKind, Option.simulatorDaemon, Option.simulatorFIDO],
                make: { invocation throws(UsageError) in
                    let text = invocation.value(Option.readerKind) ?? VirtualReaderKind.device.rawValue
                    guard let kind = VirtualReaderKind(rawValue: text) else {
                        throw UsageError("unknown reader kind \(Quote.value(text)); use one of: \(VirtualReaderKind.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    return .sim(.start(daemon: invocation.flag(Option.simulatorDaemon), fido: invocation.flag(Option.simulatorFIDO), readerKind: kind))
                }),
            CommandDescription(name: "stop", abstract: "Stop the simulator's swtpm.", make: { _ in .sim(.stop) }),
            CommandDescription(name: "status", abstract: "Show whether the simulator runs.", make: { _ in .sim(.status) }),
            CommandDescription(
                name: "touch",
                abstract: "Put a simulated finger on the simulated reader.",
                discussion: """
                    Waits until a touchstone process has the reader open. A finger is an \
                    id string: enrolling needs as many touches of one id as the reader has \
                    stages; a touch of another id does not match. With the image reader \
                    (sim start --reader-kind image) each touch of an id is a new synthetic \
                    impression of that finger, and --image sends a PNG of your own (8-bit \
                    greyscale or RGB(A), at most 1024x1024) instead of a finger.
                    """,
                arguments: [Argument.touchedID],
                options: [Option.count, Option.wait, Option.image],
                make: { invocation throws(UsageError) in
                    let wait = try invocation.value(Option.wait).map { value throws(UsageError) in
                        try NumberRules.seconds(value, Option.wait.name)
                    } ?? invocation.globals.timeout
                    if let image = try invocation.optionText(Option.image) {
                        guard invocation.value(Argument.touchedID) == nil, invocation.value(Option.count) == nil else {
                            throw UsageError("--image sends one given image: no finger id and no --count with it")
                        }
                        return .sim(.touchImage(path: image, wait: wait))
                    }
                    let count = try invocation.value(Option.count).map { value throws(UsageError) in
                        try NumberRules.whole(value, Option.count.name, in: 1...1000)
                    } ?? 1
                    guard let id = try invocation.text(Argument.touchedID) else {
                        throw UsageError("sim touch needs a finger id (or --image FILE)")
                    }
                    return .sim(.touch(id: id, count: count, wait: wait))
                }),
            CommandDescription(
                name: "retry",
                abstract: "Make the simulated reader ask for another touch.",
                arguments: [Argument.kind],
                make: { invocation throws(UsageError) in
                    let kind = invocation.value(Argument.kind) ?? ""
                    guard let retry = SimulatedRetry(rawValue: kind) else {
                        throw UsageError("unknown retry \(Quote.value(kind)); use one of: \(SimulatedRetry.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    return .sim(.retry(retry))
                }),
            CommandDescription(
                name: "error",
                abstract: "Make the simulated reader fail with a device error.",
                arguments: [Argument.code],
                make: { invocation throws(UsageError) in
                    let code = invocation.value(Argument.code) ?? ""
                    guard let error = SimulatedReaderError(code: code) else {
                        throw UsageError("unknown reader error \(Quote.value(code)); use one of: \(SimulatedReaderError.allCases.map(\.rawValue).joined(separator: ", ")), or its libfprint number")
                    }
                    return .sim(.error(error))
                }),
            CommandDescription(name: "unplug", abstract: "Unplug the simulated reader.", make: { _ in .sim(.unplug) }),
            CommandDescription(
                name: "print",
                abstract: "Write a synthetic fingerprint image as a PNG.",
                discussion: """
                    Impression N of synthetic finger ID, as the simulator's image reader \
                    gets it: the same ID and N give the same image every time; each N is \
                    another touch of the same finger. Needs no running simulator.
                    """,
                arguments: [Argument.id],
                options: [Option.impression, Option.output],
                make: { invocation throws(UsageError) in
                    let impression = try invocation.value(Option.impression).map { value throws(UsageError) in
                        try NumberRules.whole(value, Option.impression.name, in: 1...1_000_000)
                    } ?? 1
                    return .sim(.print(id: try invocation.requiredText(Argument.id), impression: impression,
                                       output: try invocation.optionText(Option.output)))
                }),
        ])

    // MARK: Others

    static let doctor = CommandDescription(
        name: "doctor",
        abstract: "Check the reader, TPM, daemon, Secret Service, ssh-agent and vault.",
        discussion: """
            One line per check with its state (ok, problem or not used) and, for a \
            problem, the fix on the line after it: a command to run, a file to install, \
            a group to join. Never prompts, never waits for a touch, needs no passcode. \
            Exit 0 when every check is ok or not used, 1 otherwise. With --json: an \
            array of objects with check, state, detail and fix (null when there is none).
            """,
        make: { _ in .doctor })

    static let demo = CommandDescription(
        name: "demo",
        abstract: "Walk through the backend on a private swtpm and virtual reader.",
        discussion: "Seals a key on a private swtpm and opens it with a simulated finger or the passcode, narrating each step. Touches no real TPM, reader or state.",
        make: { _ in .demo })

    static let help = CommandDescription(
        name: "help",
        abstract: "Show help for a command.",
        discussion: "'touchstone help <command>' prints the same text as 'touchstone <command> --help'.",
        arguments: [Argument.subcommand])

    // MARK: Options and arguments

    /// The commands' own options, each declared once: the table lists them
    /// and the commands read their values by them.
    private enum Option {
        static let yes = OptionDescription(names: ["--yes"], help: "Confirm: unenrol every finger and lose every item that needs the passcode or biometry.", isRequired: true)
        static let all = OptionDescription(names: ["--all"], help: "Remove every enrolled finger.")
        static let allowPasscode = OptionDescription(names: ["--allow-passcode"], help: "Accept the passcode instead of a touch.")
        static let access = OptionDescription(names: ["--access"], valueName: "spec", help: "What it takes to read the item back.", defaultValue: "user-presence")
        static let label = OptionDescription(names: ["--label"], valueName: "text", help: "A label shown by 'list'.")
        static let comment = OptionDescription(names: ["--comment"], valueName: "text", help: "A comment shown by 'list'.")
        static let reason = OptionDescription(names: ["--reason"], valueName: "text", help: "Why the secret is wanted, shown while waiting for a touch.")
        static let service = OptionDescription(names: ["--service"], valueName: "service", help: "Only the items of this service.")
        static let replace = OptionDescription(names: ["--replace"], help: "Take the name over from the program that owns it.")
        static let clientAccess = OptionDescription(names: ["--access"], valueName: "spec", help: "The access of items that clients create.", defaultValue: "none")
        static let fromSecretService = OptionDescription(names: ["--from-secret-service"], help: "Import every item of the Secret Service on the session bus.")
        static let importAccess = OptionDescription(names: ["--access"], valueName: "spec", help: "The access of the imported items.", defaultValue: "none")
        static let dryRun = OptionDescription(names: ["--dry-run"], help: "Read everything, add nothing: say what an import would do.")
        static let remove = OptionDescription(names: ["--remove"], help: "Remove the embedded vault after the import, instead of leaving it read-only.")
        static let simulatorDaemon = OptionDescription(names: ["--daemon"], help: "Also start a touchstoned on the simulator.")
        static let simulatorFIDO = OptionDescription(names: ["--fido"], help: "Also serve the FIDO authenticator on a loopback UDP port.")
        static let readerKind = OptionDescription(names: ["--reader-kind"], valueName: "kind", help: "The simulated reader: device, storage or image.", defaultValue: "device")
        static let image = OptionDescription(names: ["--image"], valueName: "file", help: "Send this PNG to the image reader instead of a finger.")
        static let touches = OptionDescription(names: ["--touches"], valueName: "n", help: "Set it: 1 or 2 matching touches of one finger.")
        static let count = OptionDescription(names: ["--count"], valueName: "n", help: "How many touches, from 1 to 1000.", defaultValue: "1")
        static let impression = OptionDescription(names: ["--impression"], valueName: "n", help: "Which touch of the finger, from 1 to 1000000.", defaultValue: "1")
        static let output = OptionDescription(names: ["--output"], valueName: "file", help: "Where to write the PNG (not to a terminal).", defaultValue: "standard output")
        static let wait = OptionDescription(names: ["--wait"], valueName: "seconds", help: "How long to wait for a process to open the reader, at most 3600.", defaultValue: "the --timeout value")
    }

    /// The commands' positional arguments, each declared once.
    private enum Argument {
        static let finger = ArgumentDescription(name: "finger", help: "The finger, by fprintd's name: \(Finger.allNames).", isOptional: true)
        static let service = ArgumentDescription(name: "service", help: "The service the item belongs to (at most 1024 bytes, no control characters).")
        static let account = ArgumentDescription(name: "account", help: "The account within the service (at most 1024 bytes, no control characters).")
        static let id = ArgumentDescription(name: "id", help: "The simulated finger (at most 1024 bytes, no control characters).")
        static let touchedID = ArgumentDescription(name: "id", help: "The simulated finger (at most 1024 bytes, no control characters); none with --image.", isOptional: true)
        static let kind = ArgumentDescription(name: "kind", help: "Why: \(SimulatedRetry.allCases.map(\.rawValue).joined(separator: ", ")).")
        static let code = ArgumentDescription(name: "code", help: "The error, by name or libfprint number: \(SimulatedReaderError.allCases.map(\.rawValue).joined(separator: ", ")).")
        static let subcommand = ArgumentDescription(name: "subcommand", help: "The command, and its subcommand if it has some (for example: sim touch).", isOptional: true, isRepeating: true)
    }

    // MARK: Helpers

    /// A FINGER argument, or nil when it was left out.
    private static func finger(_ value: String?) throws(UsageError) -> Finger? {
        guard let value else { return nil }
        guard let finger = Finger(fprintdName: value) else {
            throw UsageError("unknown finger \(Quote.value(value)); use one of: \(Finger.allNames)")
        }
        return finger
    }

    /// The path of commands named by `names`, starting at the root, or the
    /// first name that is not a subcommand where it stands.
    static func path(for names: [String]) -> Result<[CommandDescription], UsageError> {
        var path = [root]
        for name in names {
            let current = path[path.count - 1]
            guard let next = current.subcommand(name) else {
                return .failure(unknownCommand(name, in: path))
            }
            path.append(next)
        }
        return .success(path)
    }

    /// The error for a word that is no subcommand of the last command in
    /// `path`.
    static func unknownCommand(_ name: String, in path: [CommandDescription]) -> UsageError {
        let parent = path[path.count - 1]
        if parent.subcommands.isEmpty {
            return UsageError("'\(displayName(path))' has no subcommand \(Quote.value(name))")
        }
        let choices = parent.subcommands.map(\.name).joined(separator: ", ")
        if path.count == 1 {
            return UsageError("unknown command \(Quote.value(name)); the commands are: \(choices)")
        }
        return UsageError("unknown subcommand \(Quote.value(name)) for '\(displayName(path))'; use one of: \(choices)")
    }

    /// The commands that own an option spelled `name`, as `sim touch`.
    static func owners(ofOption name: String) -> [String] {
        var found: [String] = []
        func visit(_ command: CommandDescription, _ path: [CommandDescription]) {
            if command.option(name) != nil { found.append(displayName(path)) }
            for child in command.subcommands { visit(child, path + [child]) }
        }
        visit(root, [root])
        return found
    }

    /// The words after `touchstone` (`sim touch`), or `touchstone` for the
    /// root.
    static func displayName(_ path: [CommandDescription]) -> String {
        path.count <= 1 ? root.name : path.dropFirst().map(\.name).joined(separator: " ")
    }
}
