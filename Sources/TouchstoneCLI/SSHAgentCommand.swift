import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine
import TouchstonePOSIX
import TouchstoneSSH
import TouchstoneSecretService

/// `touchstone ssh-agent`: the vault's ssh keys over the OpenSSH agent
/// protocol (SSHAgent), each signature made by the TPM after what the
/// key's access asks for. In the foreground until SIGTERM or SIGINT (exit
/// 0, the socket removed); a systemd user unit runs it (packaging/).
extension Session {
    func sshAgent(socket: String?) async throws {
        let path = try Self.agentSocketPath(socket)
        try await withDevice { device in
            let notifier = await DesktopNotifier.connect(log: { AgentSigner.log($0) })
            let signer = AgentSigner(device: device,
                                     interaction: DesktopInteraction(terminal: interaction, title: "Touchstone ssh-agent", log: { AgentSigner.log($0) }),
                                     timeout: options.timeout, notifier: notifier)
            let agent: SSHAgent
            do {
                agent = try SSHAgent(socket: path, refused: { AgentSigner.log("refused a connection from \($0) of uid \($0.uid)") }) {
                    await signer.keys()
                }
            } catch {
                throw CLIFailure(.failure, "cannot serve the agent: \(error)")
            }
            defer {
                agent.stop()
                unlink(path)
            }
            Output.result("SSH_AUTH_SOCK=\(path); export SSH_AUTH_SOCK;")
            AgentSigner.log("listening on \(path)")
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            AgentSigner.log("stopping")
        }
    }

    /// `--socket`, or `$XDG_RUNTIME_DIR/touchstone/ssh-agent.sock` (its
    /// folder made 0700 when missing).
    static func agentSocketPath(_ given: String?) throws -> String {
        if let given { return given }
        guard let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
            throw CLIFailure(.failure, "XDG_RUNTIME_DIR is not set, so the agent has no default socket",
                             hint: "give one with --socket PATH")
        }
        let folder = runtime + "/touchstone"
        do {
            _ = try valueOrErrno(retryOnInterrupt: false) { mkdir(folder, 0o700) }
        } catch .fileExists {
            // Made before: used as it is.
        } catch {
            throw CLIFailure(.failure, "cannot make \(folder): \(error)")
        }
        return folder + "/ssh-agent.sock"
    }
}

/// The agent's keys and signatures, through the public API.
final class AgentSigner: Sendable {
    let device: TouchstoneDevice
    let interaction: DesktopInteraction
    let timeout: Duration
    let notifier: DesktopNotifier?
    /// One signature at a time: one touch, one prompt naming its requester.
    private let turns = OneAtATime()

    init(device: TouchstoneDevice, interaction: DesktopInteraction, timeout: Duration, notifier: DesktopNotifier?) {
        self.device = device
        self.interaction = interaction
        self.timeout = timeout
        self.notifier = notifier
    }

    /// The keys that can sign now (an invalidated or damaged one is not
    /// offered: ssh would try it and fail).
    func keys() async -> [any AgentKey] {
        do {
            return try await device.sshKeys.list().compactMap { info in
                guard info.state == .ok, let key = SSHPublicKey(point: info.publicPoint, comment: info.comment) else { return nil }
                return TPMAgentKey(name: info.name, publicKey: key, signer: self)
            }
        } catch {
            Self.log("cannot list the keys: \(error)")
            return []
        }
    }

    func sign(_ data: [UInt8], name: String, requester: AgentPeer) async throws -> (r: [UInt8], s: [UInt8]) {
        try await turns.run { try await self.signNow(data, name: name, requester: requester) }
    }

    private func signNow(_ data: [UInt8], name: String, requester: AgentPeer) async throws -> (r: [UInt8], s: [UInt8]) {
        let reason = "\(requester) asks to sign with the ssh key \(SafeText.quoted(name))"
        let context = device.makeContext()
        context.interaction = interaction
        context.touchTimeout = timeout
        if let notifier {
            Task.detached { await notifier.notify(summary: "Touchstone: touch the reader to sign", body: reason) }
        }
        Self.log(reason)
        do {
            let signature = try await device.sshKeys.sign(data, name: name, context: context, reason: "ssh-agent: " + reason)
            await device.close()  // the reader released between signatures
            Self.log("signed for \(requester)")
            return (signature.r, signature.s)
        } catch {
            await device.close()
            Self.log("refused \(requester): \(error)")
            throw error
        }
    }

    /// A line on stderr (never a secret: names of keys and processes).
    static func log(_ line: String) {
        Output.progress("touchstone ssh-agent: " + line)
    }
}

/// One vault key as the agent offers it.
struct TPMAgentKey: AgentKey {
    let name: String
    let publicKey: SSHPublicKey
    let signer: AgentSigner

    func sign(_ data: [UInt8], requester: AgentPeer) async throws -> (r: [UInt8], s: [UInt8]) {
        try await signer.sign(data, name: name, requester: requester)
    }
}
