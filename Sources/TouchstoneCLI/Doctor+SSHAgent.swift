import Foundation
import Touchstone
import TouchstoneSSH

/// The ssh-agent: Touchstone's agent on its socket, asked for its
/// identities as ssh-add asks, and whether SSH_AUTH_SOCK points at it.
extension Doctor {
    /// `keys`: the vault's ssh keys, nil when the vault did not open.
    func sshAgent(keys: Int?) -> DoctorCheck {
        let socket = absolutePath("XDG_RUNTIME_DIR").map { $0 + "/touchstone/ssh-agent.sock" }
        let authSocket = environment["SSH_AUTH_SOCK"].flatMap { $0.isEmpty ? nil : $0 }
        let export = "export SSH_AUTH_SOCK=\"$XDG_RUNTIME_DIR/touchstone/ssh-agent.sock\" (in your shell's profile too)"
        let start = touchstone("ssh-agent &") + ", or as a user service: packaging/systemd/user/touchstone-ssh-agent.service "
            + "(systemctl --user enable --now touchstone-ssh-agent.service)"
        // The agent SSH_AUTH_SOCK names, when it is Touchstone's on a
        // socket of its own (ssh-agent --socket).
        if let authSocket, authSocket != socket, case .success(let answer) = SSHAgentProbe.identities(at: authSocket),
           let server = answer.server, Self.isTouchstone(server) {
            return .ok(.sshAgent, "SSH_AUTH_SOCK points at Touchstone's agent on \(authSocket): \(server), \(Self.keys(answer.identities))")
        }
        guard let socket else {
            return .notUsed(.sshAgent, "XDG_RUNTIME_DIR is not set, so Touchstone's agent has no default socket"
                            + (authSocket.map { "; SSH_AUTH_SOCK points at \($0)" } ?? ""))
        }
        switch SSHAgentProbe.identities(at: socket) {
        case .success(let answer):
            let served = "Touchstone's agent answers on \(socket)" + (answer.server.map { ": \($0)" } ?? "") + ", \(Self.keys(answer.identities))"
            guard authSocket == socket else {
                let elsewhere = authSocket.map { "SSH_AUTH_SOCK points at \($0)" + (Self.agentName(at: $0).map { " (\($0))" } ?? "") }
                    ?? "SSH_AUTH_SOCK is not set"
                return .problem(.sshAgent, "\(served); \(elsewhere): ssh does not ask it", fix: export)
            }
            return .ok(.sshAgent, served + "; SSH_AUTH_SOCK points at it")
        case .failure(let failure):
            let absent = "no agent on \(socket): \(failure)"
            if authSocket == socket {
                return .problem(.sshAgent, "SSH_AUTH_SOCK points at \(socket), and \(failure)", fix: start)
            }
            guard let keys, keys > 0 else {
                return .notUsed(.sshAgent, "\(absent); " + (keys == nil ? "the vault's ssh keys are not known" : "the vault has no ssh key"))
            }
            return .problem(.sshAgent, "\(absent), and the vault has \(Self.keys(keys)) that nothing serves", fix: start + "; then " + export)
        }
    }

    /// "1 key", "3 keys".
    private static func keys(_ count: Int) -> String { "\(count) key\(count == 1 ? "" : "s")" }

    /// The program of the agent answering on `socket`, nil when none answers.
    private static func agentName(at socket: String) -> String? {
        guard case .success(let answer) = SSHAgentProbe.identities(at: socket) else { return nil }
        return answer.server?.description ?? "an agent"
    }
}
