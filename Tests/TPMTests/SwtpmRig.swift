import Foundation
import Testing
import TouchstoneSecure
@testable import TouchstoneTPM

/// A private swtpm for one test: fresh state folder under /tmp (short
/// enough for unix socket paths), its own sockets, stopped by PID
/// (TPM2_Shutdown first) and deleted afterwards. swtpm missing is a test
/// failure, never a skip.
final class SwtpmRig {
    let swtpm: Swtpm
    let directory: String

    init() throws {
        var template = Array("/tmp/ts-tpm-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        directory = String(cString: try #require(made))
        swtpm = Swtpm(directory: directory)
        try swtpm.start()
    }

    func tpm() throws -> TPM { try TPM(tcti: swtpm.tcti) }

    func stop() {
        try? swtpm.stop()
    }

    deinit {
        try? swtpm.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Runs `body` with a fresh swtpm and a TPM connected to it.
func withSwtpm<R>(_ body: (SwtpmRig, TPM) throws -> R) throws -> R {
    let rig = try SwtpmRig()
    let tpm = try rig.tpm()
    return try body(rig, tpm)
}

func randomKey() -> SecureBytes { SecureBytes.random(count: 32) }

func randomState() -> [UInt8] {
    SecureBytes.random(count: 32).withUnsafeBytes { Array($0) }
}

let rightPasscode = PasscodeAuth(passcodeString: "correct horse battery staple")
let wrongPasscode = PasscodeAuth(passcodeString: "Tr0ub4dor&3")

/// A TPM with an enrolment index holding a fresh state: the usual start.
struct Enrolled {
    let index: UInt32
    var state: [UInt8]

    init(_ tpm: TPM, state: [UInt8] = randomState()) throws {
        index = try tpm.freeEnrolmentIndex()
        self.state = state
        try tpm.defineEnrolmentIndex(index, passcode: rightPasscode, initialState: state)
    }

    var condition: BiometricCondition { BiometricCondition(nvIndex: index, domainState: state) }
}

/// Runs a tpm2-tools command against `rig`'s swtpm; returns its exit status
/// and output. A missing tool fails the test.
@discardableResult
func tpm2Tool(_ rig: SwtpmRig, _ tool: String, _ args: [String], in directory: String) throws -> (Int32, String) {
    let path = try #require(Swtpm.which(tool), "\(tool) is missing: apt-get install tpm2-tools")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = args
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    var env = ProcessInfo.processInfo.environment
    env["TPM2TOOLS_TCTI"] = rig.swtpm.tcti
    process.environment = env
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
