import Touchstone

/// How a credential maps to a vault item: the service
/// `git:<protocol>://<host>[/<path>]` (the host with its port, as git
/// sends it; the path only where git sends one, with
/// `credential.useHttpPath`), the account the username. So `touchstone
/// list` shows `git:https://example.com  alice ...`, and `touchstone add
/// git:https://example.com alice --access none` makes an item this helper
/// gives to git.
struct CredentialItem {
    let service: String

    /// The service for the request's protocol, host and path; nil when git
    /// gave no protocol or no host (a certificate's password, `protocol=cert`
    /// with a path only, is not kept here).
    init?(_ request: CredentialRequest) {
        guard let scheme = request.protocol, let host = request.host else { return nil }
        service = "git:\(scheme)://\(host)" + (request.path.map { "/" + $0 } ?? "")
    }

    /// The label `store` gives a new item, shown by `touchstone list`.
    func label(account: String) -> String { "git credential for \(account)" }

    /// The line shown above the touch prompt.
    func reason(account: String) -> String {
        "git wants the password of \(account) for \(service.dropFirst(4))"
    }
}
