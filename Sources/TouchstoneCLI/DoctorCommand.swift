import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// One finding of `touchstone doctor`: a check, its state, what was found,
/// and for a problem the fix (a command to run, a file to install, a group
/// to join).
struct DoctorCheck: Encodable, Sendable {
    /// How a check came out.
    enum State: String, Encodable, Sendable {
        case ok
        case problem
        /// The part is not in use here (no session bus, the embedded
        /// engine, no ssh keys): nothing to fix.
        case notUsed = "not used"
    }

    /// The checks, in the order they are reported.
    enum Name: String, Encodable, Sendable {
        case reader
        case tpm
        case daemon
        case secretService = "secret-service"
        case sshAgent = "ssh-agent"
        case vault
    }

    let check: Name
    let state: State
    let detail: String
    let fix: String?

    static func ok(_ check: Name, _ detail: String) -> DoctorCheck {
        DoctorCheck(check: check, state: .ok, detail: detail, fix: nil)
    }

    static func notUsed(_ check: Name, _ detail: String) -> DoctorCheck {
        DoctorCheck(check: check, state: .notUsed, detail: detail, fix: nil)
    }

    static func problem(_ check: Name, _ detail: String, fix: String) -> DoctorCheck {
        DoctorCheck(check: check, state: .problem, detail: detail, fix: fix)
    }

    enum CodingKeys: String, CodingKey { case check, state, detail, fix }

    /// `fix` is always there: null when there is none.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(check, forKey: .check)
        try container.encode(state, forKey: .state)
        try container.encode(detail, forKey: .detail)
        try container.encode(fix, forKey: .fix)
    }

    /// `reader: ok: DETAIL`, and `  fix: FIX` on the line after a problem.
    var text: String {
        "\(check.rawValue): \(state.rawValue): \(detail)" + (fix.map { "\n  fix: \($0)" } ?? "")
    }
}

extension Session {
    /// `doctor`: every check, one line each (or a JSON array); exit 1 when
    /// one found a problem. Never prompts and never opens the reader: the
    /// device's part is `status`'s report.
    func doctor() async throws {
        let checks = await Doctor(session: self).checks()
        if Task.isCancelled { throw CLIFailure.cancelled }
        if options.json { try Output.json(checks) } else { checks.forEach { Output.result($0.text) } }
        let problems = checks.filter { $0.state == .problem }.map(\.check.rawValue)
        guard problems.isEmpty else {
            throw CLIFailure(.failure, "\(problems.count) check\(problems.count == 1 ? "" : "s") found a problem: \(problems.joined(separator: ", "))")
        }
    }
}

/// What `doctor` looks at, gathered once: the engine as this command
/// resolves it, `status`'s report through it, and the process's
/// environment. Each check is in a file of its own (Doctor+*.swift).
struct Doctor {
    let options: GlobalOptions
    let translation: ErrorTranslation
    /// The configuration with its engine resolved, so that every part
    /// looks at the same one.
    let configuration: Configuration
    let environment: [String: String]

    init(session: Session) {
        options = session.options
        translation = session.translation
        var configuration = session.configuration
        configuration.engine = session.configuration.resolvedEngine
        self.configuration = configuration
        environment = ProcessInfo.processInfo.environment
    }

    /// Every check, in `DoctorCheck.Name`'s order.
    func checks() async -> [DoctorCheck] {
        let status = await TouchstoneDevice.status(of: configuration)
        // ssh keys are listed only from a vault that opened (no prompt).
        let sshKeys = status.problem == nil
            ? try? await TouchstoneDevice.withDevice(configuration) { try await $0.sshKeys.list().count } : nil
        return [
            await reader(status),
            tpm(status),
            daemon(status),
            await secretService(),
            sshAgent(keys: sshKeys),
            vault(status),
        ]
    }

    /// The socket of the daemon this command uses, nil for the embedded
    /// engine.
    var daemonSocket: String? {
        if case .daemon(let socket) = configuration.engine { return socket }
        return nil
    }

    /// A touchstone command line as the person would type it here: with
    /// `--sim` when this run uses the simulator.
    func touchstone(_ words: String) -> String {
        options.usesSimulator ? "touchstone --sim " + words : "touchstone " + words
    }

    /// An absolute path from the environment variable `name`, or nil.
    func absolutePath(_ name: String) -> String? {
        guard let value = environment[name], value.hasPrefix("/") else { return nil }
        return value
    }
}

extension Status {
    /// Why the daemon gave no report, when it gave none: then the reader,
    /// the TPM and the vault are not known.
    var daemonFailure: DaemonFailure? {
        if case .daemon(let failure)? = problem { return failure }
        return nil
    }
}
