import Foundation
import Testing
import Touchstone
import TouchstoneTestSupport

/// What an app's own unit tests get from TouchstoneTestSupport: a device
/// with no TPM and no reader, whose keychain reads authenticate through a
/// `StubBiometrics` (seeds/002: the seam, injected).
@Suite("TouchstoneTestSupport: keychain reads through StubBiometrics, no TPM")
struct TestDeviceTests {
    static let secret = Data("t0k3n".utf8)

    @Test("a protected item opens when the stub authenticates, and gives the stub's error when it does not")
    func readsFollowTheStub() async throws {
        let device = TouchstoneDevice.inMemory()
        try await device.setPasscode(Data("1234".utf8))
        try await device.keychain.add(Self.secret, service: "api", account: "alice", access: .biometryCurrentSet)

        let opened = try await device.keychain.get(service: "api", account: "alice", context: StubBiometrics(), reason: "r")
        #expect(opened.withUnsafeBytes { Data($0) } == Self.secret)

        await #expect(throws: KeychainError.userCanceled) {
            try await device.keychain.get(service: "api", account: "alice",
                                          context: StubBiometrics(error: .userCancel), reason: "r")
        }
        await #expect(throws: KeychainError.authentication(.biometryLockout)) {
            try await device.keychain.get(service: "api", account: "alice",
                                          context: StubBiometrics(error: .biometryLockout), reason: "r")
        }
        await #expect(throws: KeychainError.authFailed) {
            try await device.keychain.get(service: "api", account: "alice",
                                          context: StubBiometrics(error: .authenticationFailed), reason: "r")
        }
    }

    @Test("without a context the device's own authenticator decides; an access-none item asks nothing")
    func defaultAuthenticator() async throws {
        let refusing = TouchstoneDevice.inMemory(authenticator: StubBiometrics(error: .userCancel))
        try await refusing.setPasscode(Data("1234".utf8))
        try await refusing.keychain.add(Self.secret, service: "s", account: "locked", access: .userPresence)
        try await refusing.keychain.add(Self.secret, service: "s", account: "open", access: .none)
        await #expect(throws: KeychainError.userCanceled) {
            try await refusing.keychain.get(service: "s", account: "locked", reason: "r")
        }
        let open = try await refusing.keychain.get(service: "s", account: "open", reason: "r")
        #expect(open.withUnsafeBytes { Data($0) } == Self.secret)
        // Its own context is one of the device's: it authenticates through the same stub.
        await #expect(throws: AuthenticationError.userCancel) {
            try await refusing.makeContext().evaluate(.deviceOwnerAuthentication, reason: "r")
        }
    }

    @Test("the keychain's own rules hold: duplicates, not found, the passcode a protected item needs, limits, Codable")
    func keychainRules() async throws {
        let device = TouchstoneDevice.inMemory()
        await #expect(throws: KeychainError.authentication(.passcodeNotSet)) {
            try await device.keychain.add(Self.secret, service: "s", account: "a", access: .devicePasscode)
        }
        try await device.setPasscode(Data("1234".utf8))
        try await device.keychain.add(Self.secret, service: "s", account: "a", label: "L", access: .devicePasscode)
        await #expect(throws: KeychainError.duplicateItem) {
            try await device.keychain.add(Self.secret, service: "s", account: "a")
        }
        await #expect(throws: KeychainError.itemNotFound) {
            try await device.keychain.get(service: "s", account: "missing", reason: "r")
        }
        await #expect(throws: KeychainError.self) {
            try await device.keychain.add(Data(count: Keychain.maximumSecretSize + 1), service: "s", account: "big")
        }
        #expect(try await device.keychain.items().map(\.attributes?.label) == ["L"])
        struct Login: Codable, Equatable { var user: String; var token: String }
        try await device.keychain.add(Login(user: "ada", token: "x"), service: "s", account: "login",
                                      comment: "kept", access: .biometryAny)
        #expect(try await device.keychain.get(Login.self, service: "s", account: "login", reason: "r") == Login(user: "ada", token: "x"))
        #expect(try await device.keychain.attributes(service: "s", account: "login").comment == "kept")
        try await device.keychain.delete(service: "s", account: "login")
        await #expect(throws: KeychainError.itemNotFound) { try await device.keychain.delete(service: "s", account: "login") }
    }
}
