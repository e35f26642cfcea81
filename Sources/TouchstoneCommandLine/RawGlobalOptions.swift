/// The global options as written, before the environment and defaults
/// fill them in. A repeated option keeps its last value; `--sim` counts as
/// writing `--tpm sim --reader sim` at its place, so of `--sim` and
/// `--tpm X` the later one decides the TPM.
struct RawGlobalOptions: Sendable {
    var home: String?
    var tpm: String?
    var reader: String?
    var timeout: String?
    var passcodeFD: String?
    var daemon: String?
    var embedded = false
    var json = false

    /// Records one occurrence. `--help` and `--version` are the scanner's
    /// business and change nothing here.
    mutating func record(_ option: GlobalOption, value: String?) {
        switch option {
        case .home: home = value
        case .tpm: tpm = value
        case .reader: reader = value
        case .sim:
            tpm = "sim"
            reader = "sim"
        case .daemon: daemon = value
        case .embedded: embedded = true
        case .timeout: timeout = value
        case .passcodeFD: passcodeFD = value
        case .json: json = true
        case .version, .help: break
        }
    }

    /// The options resolved: each from its option, else its environment
    /// variable, else its default. An environment variable set to the empty
    /// string counts as unset. `TOUCHSTONE_SIM=1` sets both the TPM and the
    /// reader to the simulator and outranks `TOUCHSTONE_TPM` and
    /// `TOUCHSTONE_READER` (but not `--tpm` and `--reader`).
    func resolved(environment: [String: String]) throws(UsageError) -> GlobalOptions {
        func variable(_ name: String) -> String? {
            guard let value = environment[name], !value.isEmpty else { return nil }
            return value
        }
        let simulated: Bool
        switch variable("TOUCHSTONE_SIM") {
        case nil, "0": simulated = false
        case "1": simulated = true
        case let other?: throw UsageError("TOUCHSTONE_SIM must be 1 or 0, not \(Quote.value(other))")
        }

        var options = GlobalOptions(home: try resolvedHome(variable))
        if let tpm {
            options.tpm = try Self.tpm(tpm, "--tpm")
        } else if simulated {
            options.tpm = .simulator
        } else if let tpm = variable("TOUCHSTONE_TPM") {
            options.tpm = try Self.tpm(tpm, "TOUCHSTONE_TPM")
        }
        if let reader {
            options.reader = try Self.reader(reader, "--reader")
        } else if simulated {
            options.reader = .simulator
        } else if let reader = variable("TOUCHSTONE_READER") {
            options.reader = try Self.reader(reader, "TOUCHSTONE_READER")
        }
        if let timeout {
            options.timeout = try NumberRules.seconds(timeout, "--timeout")
        } else if let timeout = variable("TOUCHSTONE_TIMEOUT") {
            options.timeout = try NumberRules.seconds(timeout, "TOUCHSTONE_TIMEOUT")
        }
        if let passcodeFD {
            options.passcodeFD = Int32(try NumberRules.whole(passcodeFD, "--passcode-fd", in: 0...Int(Int32.max)))
        }
        if embedded {
            guard daemon == nil else { throw UsageError("--embedded and --daemon exclude each other") }
            options.engine = .embedded
        } else if let daemon {
            options.engine = .daemon(socket: try Self.socket(daemon, "--daemon"))
        } else if let daemon = variable("TOUCHSTONE_DAEMON") {
            options.engine = .daemon(socket: try Self.socket(daemon, "TOUCHSTONE_DAEMON"))
        }
        options.json = json
        return options
    }

    /// `--home`, else `TOUCHSTONE_HOME`, else `$XDG_DATA_HOME/touchstone`
    /// (when absolute, as the XDG spec asks), else
    /// `$HOME/.local/share/touchstone` (when absolute).
    private func resolvedHome(_ variable: (String) -> String?) throws(UsageError) -> String {
        if let home {
            return try TextRules.checked(home, "--home", maximumBytes: TextRules.maximumPathBytes)
        }
        if let home = variable("TOUCHSTONE_HOME") {
            return try TextRules.checked(home, "TOUCHSTONE_HOME", maximumBytes: TextRules.maximumPathBytes)
        }
        if let data = variable("XDG_DATA_HOME"), data.hasPrefix("/") {
            return try TextRules.checked(Self.join(data, "touchstone"), "XDG_DATA_HOME",
                                         maximumBytes: TextRules.maximumPathBytes)
        }
        if let user = variable("HOME"), user.hasPrefix("/") {
            return try TextRules.checked(Self.join(user, ".local/share/touchstone"), "HOME",
                                         maximumBytes: TextRules.maximumPathBytes)
        }
        throw UsageError("no state directory: give --home, or set TOUCHSTONE_HOME, XDG_DATA_HOME or HOME")
    }

    /// `base/component`, without doubling a trailing slash.
    private static func join(_ base: String, _ component: String) -> String {
        base.hasSuffix("/") ? base + component : base + "/" + component
    }

    /// A daemon's socket path: absolute, and short enough for a Unix
    /// socket address (107 bytes).
    private static func socket(_ value: String, _ what: String) throws(UsageError) -> String {
        let path = try TextRules.checked(value, what, maximumBytes: 107)
        guard path.hasPrefix("/") else { throw UsageError("\(what) needs an absolute socket path, not \(Quote.value(path))") }
        return path
    }

    /// A `--tpm` value: `sim`, or a TCTI string checked as text.
    private static func tpm(_ value: String, _ what: String) throws(UsageError) -> TPMSelection {
        value == "sim" ? .simulator : .tcti(try TextRules.checked(value, what, maximumBytes: TextRules.maximumPathBytes))
    }

    /// A `--reader` value: `auto`, `sim`, or a reader id checked as text.
    private static func reader(_ value: String, _ what: String) throws(UsageError) -> ReaderSelection {
        switch value {
        case "auto": .automatic
        case "sim": .simulator
        default: .id(try TextRules.checked(value, what))
        }
    }
}
