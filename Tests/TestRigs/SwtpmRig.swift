import Foundation
import TouchstoneSecure
import TouchstoneSimulator
import TouchstoneTPM

/// A failure of a test rig itself (not of the code under test).
package struct RigFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// A fresh private folder under /tmp (short enough for unix socket paths).
package func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw RigFailure("mkdtemp failed: errno \(errno)")
    }
    return String(cString: made)
}

/// A private swtpm for one test: fresh state folder, its own sockets,
/// stopped by PID (TPM2_Shutdown first) and deleted afterwards. swtpm
/// missing is a failure, never a skip.
package final class SwtpmRig: @unchecked Sendable {
    package let swtpm: Swtpm
    package let directory: String

    package init() throws {
        directory = try makeTemporaryDirectory("ts-tpm")
        swtpm = Swtpm(directory: directory)
        try swtpm.start()
    }

    package func tpm() throws -> TPM { try TPM(tcti: swtpm.tcti) }

    package func stop() {
        try? swtpm.stop()
    }

    deinit {
        try? swtpm.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Runs `body` with a fresh swtpm and a TPM connected to it.
package func withSwtpm<R>(_ body: (SwtpmRig, TPM) throws -> R) throws -> R {
    let rig = try SwtpmRig()
    let tpm = try rig.tpm()
    return try body(rig, tpm)
}

/// Async variant.
package func withSwtpm<R>(_ body: (SwtpmRig, TPM) async throws -> R) async throws -> R {
    let rig = try SwtpmRig()
    let tpm = try rig.tpm()
    return try await body(rig, tpm)
}

package func randomKey() -> SecureBytes { SecureBytes.random(count: 32) }

package func randomState() -> [UInt8] {
    SecureBytes.random(count: 32).withUnsafeBytes { Array($0) }
}

package let rightPasscode = PasscodeAuth(passcodeString: "correct horse battery staple")

/// The attack on a counter, with the owner's rights: the counter at
/// `handle` undefined and an ordinary NV index defined in its place,
/// holding `value` in its first 8 bytes (big-endian, as PolicyNV reads a
/// counter), writable by whoever defined it.
package func replaceCounterWithOrdinaryIndex(_ tpm: TPM, at handle: UInt32, holding value: UInt64) throws {
    try tpm.undefineNVIndex(handle)
    let planted = withUnsafeBytes(of: value.bigEndian) { Array($0) } + [UInt8](repeating: 0, count: TPM.enrollmentStateSize - 8)
    try tpm.defineEnrollmentIndex(handle, passcode: PasscodeAuth(passcodeString: "someone else"), initialState: planted)
}
package let wrongPasscode = PasscodeAuth(passcodeString: "Tr0ub4dor&3")

/// A TPM with an enrolment index holding a fresh state: the usual start.
package struct Enrolled {
    package let index: UInt32
    package var state: [UInt8]

    package init(_ tpm: TPM, state: [UInt8] = randomState()) throws {
        index = try tpm.freeEnrollmentIndex()
        self.state = state
        try tpm.defineEnrollmentIndex(index, passcode: rightPasscode, initialState: state)
    }

    package var condition: BiometricCondition { BiometricCondition(nvIndex: index, domainState: state) }
}

/// Runs a tpm2-tools command against `rig`'s swtpm; returns its exit status
/// and output. A missing tool is a failure. (posix_spawn, not Foundation's
/// Process, whose wait needs the run loop and a free Dispatch thread.)
@discardableResult
package func tpm2Tool(_ rig: SwtpmRig, _ tool: String, _ args: [String], in directory: String) throws -> (Int32, String) {
    guard let path = Swtpm.which(tool) else { throw RigFailure("\(tool) is missing: apt-get install tpm2-tools") }
    var environment = ProcessInfo.processInfo.environment
    environment["TPM2TOOLS_TCTI"] = rig.swtpm.tcti
    environment["TSS2_LOG"] = nil
    let output = directory + "/.tool-output"
    let status = try Swtpm.run(path, args, output: output, environment: environment, directory: directory)
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    return (status, text)
}
