import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine
import TouchstoneSSH

/// ssh-key create, list, delete: keys that the TPM makes and keeps.
extension Session {
    func sshKey(_ action: Command.SSHKeyAction) async throws {
        switch action {
        case .create(let name, let access, let comment):
            let info = try await sshKeyCall(name) { try await withDevice { try await $0.sshKeys.create(name: name, comment: comment ?? "", access: access) } }
            guard let key = SSHPublicKey(point: info.publicPoint, comment: info.comment) else {
                throw CLIFailure(.failure, "the TPM returned a key that is not a P-256 point")
            }
            Output.result(key.line)
        case .list:
            let keys = try await withDevice { try await $0.sshKeys.list() }
            let entries = keys.map(SSHKeyEntry.init)
            if options.json {
                try Output.json(entries)
                return
            }
            for entry in entries { Output.result(entry.line) }
            if entries.contains(where: { $0.state == "corrupted" }) {
                Output.progress("touchstone: some ssh key records are corrupted; 'touchstone ssh-key delete' removes them")
            }
        case .delete(let name):
            try await sshKeyCall(name) { try await withDevice { try await $0.sshKeys.delete(name: name) } }
        case .sign(let name, let namespace, let reason):
            let message = Array(FileHandle.standardInput.readDataToEndOfFile())
            let armored = try await sshKeyCall(name) {
                try await withDevice { device in
                    guard let info = try await device.sshKeys.list().first(where: { $0.name == name }) else { throw KeychainError.itemNotFound }
                    guard let key = SSHPublicKey(point: info.publicPoint, comment: info.comment) else { throw KeychainError.corrupted("the ssh key's record") }
                    let signature = try await device.sshKeys.sign(SSHSignatureFile.signedData(message: message, namespace: namespace),
                                                                  name: name, context: makeContext(device),
                                                                  reason: reason ?? "touchstone ssh-key sign: sign with the ssh key \(SafeText.quoted(name))")
                    return SSHSignatureFile.armored(publicKey: key, namespace: namespace, r: signature.r, s: signature.s)
                }
            }
            try Task.checkCancellation()
            Output.result(String(armored.dropLast()))
        }
    }

    /// `body`, its not-found, exists and invalidated errors told as a key's.
    func sshKeyCall<R>(_ name: String, _ body: () async throws -> R) async throws -> R {
        do {
            return try await body()
        } catch KeychainError.itemNotFound {
            throw CLIFailure(.itemNotFound, "no ssh key named \(SafeText.quoted(name))", hint: "'touchstone ssh-key list' shows the keys")
        } catch KeychainError.duplicateItem {
            throw CLIFailure(.duplicateItem, "an ssh key named \(SafeText.quoted(name)) exists")
        } catch KeychainError.itemInvalidated {
            throw CLIFailure(.itemInvalidated, "the ssh key \(SafeText.quoted(name)) was invalidated: the enrolled fingers changed and it allows no other way in")
        }
    }
}

/// One key as `ssh-key list` shows it: never anything of the private key.
struct SSHKeyEntry: Encodable {
    var name: String?
    var fingerprint: String?
    var access: String?
    var comment: String?
    var created: String?
    var state: String
    /// The OpenSSH public key line.
    var publicKey: String?

    init(_ info: SSHKeyInfo) {
        state = info.state.rawValue
        guard info.state != .corrupted, let key = SSHPublicKey(point: info.publicPoint, comment: info.comment) else {
            if state == "ok" { state = "corrupted" }
            return
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        name = info.name
        fingerprint = key.fingerprint
        access = info.access.description
        comment = info.comment
        created = formatter.string(from: info.created)
        publicKey = key.line
    }

    enum CodingKeys: String, CodingKey { case name, fingerprint, access, comment, created, state, publicKey }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(fingerprint, forKey: .fingerprint)
        try container.encode(access, forKey: .access)
        try container.encode(comment, forKey: .comment)
        try container.encode(created, forKey: .created)
        try container.encode(state, forKey: .state)
        try container.encode(publicKey, forKey: .publicKey)
    }

    /// Tab-separated: name, fingerprint, access, state, created, comment.
    var line: String {
        // A comment an ssh-add client gave may hold any character: escaped.
        [name ?? "?", fingerprint ?? "?", access ?? "?", state, created ?? "?", comment ?? ""].map(SafeText.escaped).joined(separator: "\t")
    }
}
