import TouchstoneSimulator
import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// Runs tpm2-tools programs as separate processes, the way a shell script
/// would, against the private swtpm (TPM2TOOLS_TCTI). Their files live in
/// `directory` and are named by absolute path.
///
/// stdout is read into memory through a pipe (the unsealed key never
/// touches the disk); stderr is kept for the error message.
struct ToolRunner {
    /// Every tpm2-tools program the sequences use.
    static let programs = ["tpm2_load", "tpm2_startauthsession", "tpm2_policypcr", "tpm2_policynv",
                           "tpm2_policyauthvalue", "tpm2_policyor", "tpm2_unseal", "tpm2_flushcontext"]

    let directory: String
    let environment: [String: String]
    private let paths: [String: String]

    /// Finds every program (a clear error names the package when one is
    /// missing) and prepares the environment: the caller's, as it was when
    /// the benchmark started, plus the TCTI of the private swtpm.
    init(directory: String, tcti: String, baseEnvironment: [String: String]) throws {
        var paths: [String: String] = [:]
        for program in Self.programs {
            guard let path = Swtpm.which(program) else { throw BenchError.missingTool(name: program, package: "tpm2-tools") }
            paths[program] = path
        }
        self.paths = paths
        self.directory = directory
        var environment = baseEnvironment
        environment["TPM2TOOLS_TCTI"] = tcti
        self.environment = environment
    }

    /// The tools' version (from `tpm2_unseal -v`), e.g. "5.4".
    func version() -> String? {
        guard let out = try? run(ToolStep(["tpm2_unseal", "-v"])) else { return nil }
        defer { out.wipe() }
        let text = String(decoding: out.bytes, as: UTF8.self)
        guard let range = text.range(of: "version=\"") else { return nil }
        return String(text[range.upperBound...].prefix { $0 != "\"" })
    }

    /// Runs one step to completion and returns what it wrote to stdout.
    /// A non-zero exit throws, with the step (secrets redacted) and stderr.
    func run(_ step: ToolStep) throws -> ToolOutput {
        var outcome = try ChildProcess.run(paths[step.program] ?? step.program, step.arguments, environment: environment)
        let out = ToolOutput(taking: &outcome.stdout)
        guard outcome.status == 0 else {
            out.wipe()
            try Interruption.check()  // Ctrl-C reaches the tool too
            throw BenchError.toolFailed(step: step.shown, status: outcome.status,
                                        stderr: String(decoding: outcome.stderr, as: UTF8.self))
        }
        return out
    }
}

/// One tpm2-tools invocation.
struct ToolStep {
    let program: String
    let arguments: [String]
    /// Its stdout is the unsealed key.
    let yieldsKey: Bool

    init(_ command: [String], yieldsKey: Bool = false) {
        program = command[0]
        arguments = Array(command.dropFirst())
        self.yieldsKey = yieldsKey
    }

    /// The command line for messages and the report, with any authValue
    /// (`hex:...`) replaced by a placeholder.
    var shown: String {
        ([program] + arguments.map { argument in
            guard let range = argument.range(of: "hex:") else { return argument }
            return argument[..<range.upperBound] + "<passcode authValue>"
        }).joined(separator: " ")
    }
}

/// A tool's stdout, held so it can be wiped: for tpm2_unseal it is the key.
final class ToolOutput {
    private(set) var bytes: [UInt8]

    /// Takes `bytes`, leaving the source empty.
    init(taking source: inout [UInt8]) {
        bytes = source
        source = []
    }

    func wipe() { secureWipe(&bytes) }
    deinit { secureWipe(&bytes) }
}
