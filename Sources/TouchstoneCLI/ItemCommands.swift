import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// add, get, update, delete, list: the Keychain from the command line.
extension Session {
    func add(service: String, account: String, access: AccessControl, label: String?, comment: String?) async throws {
        let secret = try SecretInput.readStandardInput()
        try await withDevice { device in
            try await device.keychain.add(secret, service: service, account: account, label: label,
                                          comment: comment, access: access)
        }
    }

    func get(service: String, account: String, reason: String?) async throws {
        try await withDevice { device in
            let secret = try await device.keychain.get(service: service, account: account, context: makeContext(device),
                                                       reason: reason ?? "touchstone get: read the secret of \(service) / \(account)")
            try Task.checkCancellation()  // a signal just now: write nothing
            do {
                try secret.withUnsafeBytes { bytes in try Output.writeAll(1, bytes) }
            } catch {
                throw CLIFailure(.failure, "cannot write the secret to stdout: \(error)")
            }
        }
    }

    func update(service: String, account: String) async throws {
        let secret = try SecretInput.readStandardInput()
        try await withDevice { device in
            try await device.keychain.update(secret, service: service, account: account, context: makeContext(device),
                                             reason: "touchstone update: replace the secret of \(service) / \(account)")
        }
    }

    func delete(service: String, account: String) async throws {
        try await withDevice { try await $0.keychain.delete(service: service, account: account) }
    }

    func list(service: String?) async throws {
        let items = try await withDevice { try await $0.keychain.items(service: service) }
        let entries = items.map(ListEntry.init)
        if options.json {
            try Output.json(entries)
            return
        }
        for entry in entries { Output.result(entry.line) }
        if entries.contains(where: { $0.state == "corrupted" }) {
            Output.progress("touchstone: some records are corrupted; 'touchstone delete' removes them")
        }
    }
}

/// One item as `list` shows it: metadata only, never the secret.
struct ListEntry: Encodable {
    var service: String?
    var account: String?
    var label: String?
    var comment: String?
    var access: String?
    var created: String?
    var modified: String?
    /// `ok`, `invalidated`, or `corrupted` (a record that no longer
    /// decrypts: its other fields are null).
    var state: String

    init(_ item: ListedItem) {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        service = item.attributes?.service
        account = item.attributes?.account
        label = item.attributes?.label
        comment = item.attributes?.comment
        access = item.attributes?.access.description
        created = item.attributes.map { formatter.string(from: $0.created) }
        modified = item.attributes.map { formatter.string(from: $0.modified) }
        state = item.state.rawValue
    }

    enum CodingKeys: String, CodingKey { case service, account, label, comment, access, created, modified, state }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(service, forKey: .service)
        try container.encode(account, forKey: .account)
        try container.encode(label, forKey: .label)
        try container.encode(comment, forKey: .comment)
        try container.encode(access, forKey: .access)
        try container.encode(created, forKey: .created)
        try container.encode(modified, forKey: .modified)
        try container.encode(state, forKey: .state)
    }

    /// Tab-separated: service, account, access, state, created, modified,
    /// label, comment; each field escaped (a label a Secret Service client
    /// gave may hold any character).
    var line: String {
        [service ?? "?", account ?? "?", access ?? "?", state, created ?? "?", modified ?? "?", label ?? "", comment ?? ""]
            .map(SafeText.escaped).joined(separator: "\t")
    }
}
