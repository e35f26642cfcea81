import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// A failure of a test rig itself (not of the code under test).
public struct RigFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A fresh private folder under /tmp (short enough for unix socket paths).
public func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw RigFailure("mkdtemp failed: errno \(errno)")
    }
    return String(cString: made)
}

/// A private swtpm for one test: fresh state folder, its own sockets,
/// stopped by PID (TPM2_Shutdown first) and deleted afterwards. swtpm
/// missing is a failure, never a skip.
public final class SwtpmRig: @unchecked Sendable {
    public let swtpm: Swtpm
    public let directory: String

    public init() throws {
        directory = try makeTemporaryDirectory("ts-tpm")
        swtpm = Swtpm(directory: directory)
        try swtpm.start()
    }

    public func tpm() throws -> TPM { try TPM(tcti: swtpm.tcti) }

    public func stop() {
        try? swtpm.stop()
    }

    deinit {
        try? swtpm.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Runs `body` with a fresh swtpm and a TPM connected to it.
public func withSwtpm<R>(_ body: (SwtpmRig, TPM) throws -> R) throws -> R {
    let rig = try SwtpmRig()
    let tpm = try rig.tpm()
    return try body(rig, tpm)
}

/// Async variant.
public func withSwtpm<R>(_ body: (SwtpmRig, TPM) async throws -> R) async throws -> R {
    let rig = try SwtpmRig()
    let tpm = try rig.tpm()
    return try await body(rig, tpm)
}

public func randomKey() -> SecureBytes { SecureBytes.random(count: 32) }

public func randomState() -> [UInt8] {
    SecureBytes.random(count: 32).withUnsafeBytes { Array($0) }
}

public let rightPasscode = PasscodeAuth(passcodeString: "correct horse battery staple")
public let wrongPasscode = PasscodeAuth(passcodeString: "Tr0ub4dor&3")

/// A TPM with an enrolment index holding a fresh state: the usual start.
public struct Enrolled {
    public let index: UInt32
    public var state: [UInt8]

    public init(_ tpm: TPM, state: [UInt8] = randomState()) throws {
        index = try tpm.freeEnrolmentIndex()
        self.state = state
        try tpm.defineEnrolmentIndex(index, passcode: rightPasscode, initialState: state)
    }

    public var condition: BiometricCondition { BiometricCondition(nvIndex: index, domainState: state) }
}

/// Runs a tpm2-tools command against `rig`'s swtpm; returns its exit status
/// and output. A missing tool is a failure. (posix_spawn, not Foundation's
/// Process, whose wait needs the run loop and a free Dispatch thread.)
@discardableResult
public func tpm2Tool(_ rig: SwtpmRig, _ tool: String, _ args: [String], in directory: String) throws -> (Int32, String) {
    guard let path = Swtpm.which(tool) else { throw RigFailure("\(tool) is missing: apt-get install tpm2-tools") }
    var environment = ProcessInfo.processInfo.environment
    environment["TPM2TOOLS_TCTI"] = rig.swtpm.tcti
    environment["TSS2_LOG"] = nil
    let output = directory + "/.tool-output"
    let status = try Swtpm.run(path, args, output: output, environment: environment, directory: directory)
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    return (status, text)
}
