/// The options every command accepts, before or after the command: the
/// table the parser, `RawGlobalOptions` and the help all read.
enum GlobalOption: CaseIterable, Sendable {
    case home, tpm, reader, sim, daemon, embedded, timeout, passcodeFD, json, version, help

    /// The option's spellings, value and help.
    var description: OptionDescription {
        switch self {
        case .home:
            OptionDescription(names: ["--home"], valueName: "dir", help: "The state directory.",
                              defaultValue: "$XDG_DATA_HOME/touchstone, else ~/.local/share/touchstone",
                              environment: "TOUCHSTONE_HOME")
        case .tpm:
            OptionDescription(names: ["--tpm"], valueName: "tcti",
                              help: "The TPM: a tss2 TCTI string, or 'sim' for the simulator's swtpm.",
                              defaultValue: "device:/dev/tpmrm0", environment: "TOUCHSTONE_TPM")
        case .reader:
            OptionDescription(names: ["--reader"], valueName: "which",
                              help: "The fingerprint reader: 'auto' (the first libfprint reader), 'sim', or a reader id shown by 'status'.",
                              defaultValue: "auto", environment: "TOUCHSTONE_READER")
        case .sim:
            OptionDescription(names: ["--sim"], help: "Use the simulator: the same as --tpm sim --reader sim.",
                              environment: "TOUCHSTONE_SIM=1")
        case .daemon:
            OptionDescription(names: ["--daemon"], valueName: "path",
                              help: "Talk to the touchstoned listening on the Unix socket <path>.",
                              defaultValue: "/run/touchstone/socket when it exists (with --sim: the simulator's daemon, if started)",
                              environment: "TOUCHSTONE_DAEMON")
        case .embedded:
            OptionDescription(names: ["--embedded"], help: "Open the vault in this process, even where a daemon's socket exists.")
        case .timeout:
            OptionDescription(names: ["--timeout"], valueName: "seconds",
                              help: "How long to wait for a touch: more than 0, at most 3600.",
                              defaultValue: "30", environment: "TOUCHSTONE_TIMEOUT")
        case .passcodeFD:
            OptionDescription(names: ["--passcode-fd"], valueName: "n",
                              help: "Read the passcode from file descriptor <n>, one line per passcode asked, instead of the terminal.")
        case .json:
            OptionDescription(names: ["--json"], help: "Machine-readable output on stdout.")
        case .version:
            OptionDescription(names: ["--version"], help: "Show the version.")
        case .help:
            OptionDescription(names: ["-h", "--help"], help: "Show help information.")
        }
    }

    /// The global option spelled `name`, if any.
    static func named(_ name: String) -> GlobalOption? {
        allCases.first { $0.description.names.contains(name) }
    }
}
