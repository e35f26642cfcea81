import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// fido list, delete: FIDO credentials that the TPM makes and keeps.
extension Session {
    func fido(_ action: Command.FIDOAction) async throws {
        switch action {
        case .list:
            let entries = try await withDevice { try await $0.fido.list() }.map(FIDOCredentialEntry.init)
            if options.json {
                try Output.json(entries)
                return
            }
            for entry in entries { Output.result(entry.line) }
            if entries.contains(where: { $0.state == "corrupted" }) {
                Output.progress("touchstone: some FIDO credential records are corrupted")
            }
        case .serve(let udp, let uhid, let access):
            try await fidoServe(udp: udp, uhid: uhid, access: access)
        case .delete(let given):
            try await withDevice { device in
                let id = try Self.credentialID(given, among: try await device.fido.list())
                let passcode = try await interaction.readPasscode(prompt: "Passcode: ")
                do {
                    try await device.fido.delete(id: id, passcode: passcode)
                } catch KeychainError.itemNotFound {
                    throw Self.noCredential(given)
                }
            }
        }
    }

    /// The credential `given` names: its whole id, or the start of one
    /// (only one may start so).
    static func credentialID(_ given: String, among credentials: [FIDOCredentialInfo]) throws -> [UInt8] {
        let ids = credentials.filter { $0.state != .corrupted }.map(\.id)
        if let whole = ids.first(where: { FIDOCredentialInfo.base64url($0) == given }) { return whole }
        let starting = ids.filter { FIDOCredentialInfo.base64url($0).hasPrefix(given) }
        guard !given.isEmpty, let first = starting.first else { throw noCredential(given) }
        guard starting.count == 1 else {
            throw CLIFailure(.usage, "\(SafeText.quoted(given)) is the start of \(starting.count) credentials' ids", hint: "give more of it")
        }
        return first
    }

    private static func noCredential(_ given: String) -> CLIFailure {
        CLIFailure(.itemNotFound, "no FIDO credential \(SafeText.quoted(given))", hint: "'touchstone fido list' shows the credentials")
    }
}

/// One credential as `fido list` shows it: never anything of the private key.
struct FIDOCredentialEntry: Encodable {
    var id: String?
    var relyingParty: String?
    var user: String?
    var discoverable: Bool?
    var verificationRequired: Bool?
    var access: String?
    var created: String?
    var signCount: UInt32?
    var state: String

    init(_ info: FIDOCredentialInfo) {
        state = info.state.rawValue
        guard info.state != .corrupted else { return }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        id = info.idText
        relyingParty = info.relyingParty
        user = info.userName
        discoverable = info.discoverable
        verificationRequired = info.verificationRequired
        access = info.access.description
        created = formatter.string(from: info.created)
        signCount = info.signCount
    }

    enum CodingKeys: String, CodingKey { case id, relyingParty, user, discoverable, verificationRequired, access, created, signCount, state }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(relyingParty, forKey: .relyingParty)
        try container.encode(user, forKey: .user)
        try container.encode(discoverable, forKey: .discoverable)
        try container.encode(verificationRequired, forKey: .verificationRequired)
        try container.encode(access, forKey: .access)
        try container.encode(created, forKey: .created)
        try container.encode(signCount, forKey: .signCount)
        try container.encode(state, forKey: .state)
    }

    /// Tab-separated: id, relying party, user, discoverable or not
    /// (and verify-required), access, created, signature count, state.
    var line: String {
        let kind = discoverable.map { $0 ? "discoverable" : "non-discoverable" } ?? "?"
        let options = verificationRequired == true ? kind + ",verify-required" : kind
        // The relying party and the user are a client's words: escaped.
        return [id ?? "?", relyingParty ?? "?", user ?? "", options, access ?? "?", created ?? "?",
                signCount.map(String.init) ?? "?", state].map(SafeText.escaped).joined(separator: "\t")
    }
}
