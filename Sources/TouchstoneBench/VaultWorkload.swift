import Foundation
import TouchstoneSecure
import TouchstoneVault

/// The items one measured vault holds: one service, numbered accounts, a
/// label, and a random secret each. The secrets are kept to check every
/// read; they are throwaways made for this run.
struct VaultWorkload {
    static let service = "org.example.touchstone-bench"
    /// Bytes per secret (a password or token's size).
    static let secretSize = 32

    let count: Int
    let access: AccessControl
    let secrets: [SecureBytes]

    init(count: Int, access: AccessControl) {
        self.count = count
        self.access = access
        secrets = (0..<count).map { _ in SecureBytes.random(count: Self.secretSize) }
    }

    static func account(_ n: Int) -> String { "user-\(String(n).leftPadded(to: 7))@example.org" }

    /// Item `n`'s attributes (made outside the timed add).
    func attributes(_ n: Int) -> ItemAttributes {
        ItemAttributes(service: Self.service, account: Self.account(n), label: "Bench item \(n)", access: access)
    }
}

extension String {
    /// Zero-padded on the left to `width` characters.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
