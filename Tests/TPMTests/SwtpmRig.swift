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
