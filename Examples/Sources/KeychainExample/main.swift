import Foundation
import Touchstone

// The simulator: a private swtpm and libfprint's virtual reader, under a
// state folder of its own. With a TPM and a reader, open the device with
// `Configuration()` instead (this user's state, /dev/tpmrm0, the first
// reader) and touch the reader with a real finger.
let home = FileManager.default.temporaryDirectory.appendingPathComponent("touchstone-example-\(getpid())")
let simulator = Simulator(home: home)
try simulator.start()
defer {
    try? simulator.stop()
    try? FileManager.default.removeItem(at: home)
}

/// The person at the reader: when a touch is awaited, says why and puts
/// simulated finger "alice" on it.
struct Alice: AuthenticationInteraction {
    let simulator: Simulator

    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        print("touch requested: \(reason)")
        try? await simulator.touch("alice")
        try? await Task.sleep(for: .seconds(3600))  // the match ends the wait
    }

    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes { throw .userCancel }
}

let passcode = Data("correct horse battery staple".utf8)
try await TouchstoneDevice.withDevice(.simulator(home: home)) { device in
    try await device.setPasscode(passcode)

    // Enrolling takes five touches of one finger on the simulated reader.
    let touches = Task { for _ in 0..<5 { try await simulator.touch("alice") } }
    try await device.enroll(.rightIndex, passcode: passcode) { print("enrolling:", $0) }
    try await touches.value

    try await device.keychain.add(Data("ghp_example".utf8), service: "github", account: "alice",
                                  access: .biometryCurrentSet)

    let context = device.makeContext()
    context.interaction = Alice(simulator: simulator)
    let token = try await device.keychain.get(service: "github", account: "alice",
                                              context: context, reason: "Sign in to GitHub")
    token.withUnsafeBytes { print("token:", String(decoding: $0, as: UTF8.self)) }  // wiped when released
}
