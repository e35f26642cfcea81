import Testing
@testable import TouchstoneCommandLine

@Suite("Secrets never travel in arguments")
struct SecretFreeArgumentsTests {
    @Test("no option of any command takes a secret", arguments: allCommandPaths)
    func noSecretOption(_ path: [String]) throws {
        guard case .success(let commands) = CommandTable.path(for: path) else {
            Issue.record("\(path) is not in the table")
            return
        }
        let command = try #require(commands.last)
        for option in command.options + GlobalOption.allCases.map(\.description) {
            for name in option.names {
                // A flag carries no value (`import --from-secret-service`); an option with one must not look like a secret.
                for word in ["secret", "password", "pin", "key", "token"] where option.valueName != nil {
                    #expect(!name.contains(word), "\(name) of \(path) looks like it takes a secret")
                }
                if name.contains("passcode") {
                    #expect(["--passcode-fd", "--allow-passcode"].contains(name), "\(name) of \(path) may take a passcode")
                }
            }
        }
    }

    @Test("options that would take a secret are unknown", arguments: ["--passcode", "--secret", "--password", "--value", "--data"])
    func refused(_ option: String) {
        #expect(usageError(["add", "s", "a", option, "hunter2"])?.message.hasPrefix("unknown option '\(option)'") == true)
        #expect(usageError(["passcode", "set", option, "hunter2"])?.message.hasPrefix("unknown option '\(option)'") == true)
    }
}
