import Foundation
import Touchstone
import TouchstoneDBus

/// Prompts: the one place the provider waits for the person. Unlock makes
/// one (exported at /org/freedesktop/secrets/prompt/N) and returns at
/// once; the client calls Prompt() (answered at once too) and waits for
/// Completed, which comes after the touch, the passcode, a failure (a
/// stranger's finger, a lockout: dismissed), Dismiss(), or the client
/// leaving the bus.
extension SecretServiceProvider {
    /// A prompt made by Unlock and not completed yet.
    struct PendingPrompt: Sendable {
        let path: String
        /// The client that may run it (the one that called Unlock).
        let owner: String
        let items: [(reference: ItemReference, label: String)]
        /// Collections locked as a whole that it unlocks (their ids).
        var collections: [String] = []
        var registration: [DBusRegistration] = []
        var task: Task<Void, Never>?
    }

    func makePrompt(for client: String, items: [(ItemReference, String)], collections: [String] = []) async -> Result<String, DBusError> {
        let path = state.withLock { state -> String in
            defer { state.nextPrompt += 1 }
            let path = SecretPaths.prompts + String(state.nextPrompt)
            state.prompts[path] = PendingPrompt(path: path, owner: client, items: items.map { ($0.0, $0.1) }, collections: collections)
            return path
        }
        do {
            let ids = try await bus.export(ProviderObject(self), at: path, introspection: Introspection.prompt)
            let kept = state.withLock { state -> Bool in
                guard state.prompts[path] != nil else { return false }
                state.prompts[path]?.registration = ids
                return true
            }
            if !kept { await bus.unexport(ids) }
            return .success(path)
        } catch {
            state.withLock { $0.prompts[path] = nil }
            return .failure(DBusError(name: SecretError.failed, "cannot export the prompt: \(error)"))
        }
    }

    func promptCall(_ call: DBusCall) async -> Answer {
        let path = call.objectPath
        guard let prompt = state.withLock({ $0.prompts[path] }) else { return .failure(Self.noSuchObject(path)) }
        guard prompt.owner == call.sender else {
            return .failure(DBusError(name: SecretError.accessDenied, "\(path) is another connection's prompt"))
        }
        switch call.method {
        case "Prompt":
            let program = await programName(call.sender)
            let started = state.withLock { state -> Bool in
                guard state.prompts[path]?.task == nil else { return false }
                state.prompts[path]?.task = Task { [weak self] in await self?.run(prompt, program: program) }
                return true
            }
            guard started else { return .failure(DBusError(name: SecretError.failed, "\(path) is running already")) }
            return .success([])
        case "Dismiss":
            let task = state.withLock { $0.prompts[path]?.task }
            if let task { task.cancel() } else { await complete(prompt, unlocked: nil, collections: []) }
            return .success([])
        default:
            return .failure(DBusError(name: SecretError.unknownMethod, "no method \(call.method)"))
        }
    }

    /// The prompt's work: one authentication for the set, its text naming
    /// every item (`PromptWording.items`), the same words as the
    /// reason the engine is given, the notification and the log; each item
    /// read once through that context (its grant reused for the next item
    /// where it suffices; an item whose access asks more prompts again, in
    /// the same words), then Completed. The unlock recorded covers the items
    /// opened, for the reuse window from the first one opened.
    private func run(_ prompt: PendingPrompt, program: String) async {
        let context = device.makeContext()
        context.allowableReuseDuration = Self.unlockDuration
        let summary = Self.summary(program: program, items: prompt.items.map(\.label),
                                   collections: state.withLock { state in prompt.collections.map { state.book.records[$0]?.label ?? $0 } })
        context.interaction = PromptInteraction(prompter: prompter, notifier: notifier, summary: summary)
        var opened: [ItemReference] = [], openedLabels: [String] = []
        var authenticated: Date?
        var unlockedCollections: [String] = []
        if !prompt.collections.isEmpty {
            // The person, as deviceOwnerAuthentication asks (a touch, or the passcode).
            do {
                try await context.evaluate(.deviceOwnerAuthentication, reason: summary)
                authenticated = Self.clock()
                unlockCollections(prompt.collections)
                unlockedCollections = prompt.collections
                prompter.log("\(program) (\(prompt.owner)) unlocked the collection \(PromptWording.items(prompt.collections))")
            } catch {
                prompter.log("\(program) (\(prompt.owner)) did not unlock the collection \(PromptWording.items(prompt.collections)): \(error)")
            }
        }
        for (reference, label) in prompt.items where unlockedCollections.count == prompt.collections.count {
            if Task.isCancelled { break }
            do {
                _ = try await keychain.get(reference, context: context, reason: summary)
                if authenticated == nil { authenticated = Self.clock() }
                opened.append(reference)
                openedLabels.append(label)
            } catch {
                prompter.log("\(program) (\(prompt.owner)) did not unlock \(PromptWording.items([label])): \(error.description)")
                if case .authentication(let why) = error, case .userCancel = why { break }
            }
        }
        // The reader goes back (fprintd or another program may want it).
        if state.withLock({ $0.prompts.values.filter { $0.task != nil }.count }) <= 1 { await device.close() }
        context.interactionNotAllowed = true
        let unlocked = Task.isCancelled || (opened.isEmpty && unlockedCollections.isEmpty) ? nil : opened
        if let unlocked, !unlocked.isEmpty, let authenticated {
            prompter.log("\(program) (\(prompt.owner)) unlocked \(PromptWording.items(openedLabels))")
            let unlock = Unlock(context: context, items: Set(unlocked), until: authenticated.addingTimeInterval(Self.unlockDuration))
            state.withLock { state in
                var unlocks = state.unlocks[prompt.owner] ?? []
                unlocks.append(unlock)
                state.unlocks[prompt.owner] = Array(unlocks.suffix(Self.maximumUnlocks))
            }
        }
        await complete(prompt, unlocked: unlocked, collections: unlockedCollections)
    }

    /// A prompt's words: the program, then the collections it unlocks and
    /// the items it opens (`PromptWording.items` for each).
    static func summary(program: String, items: [String], collections: [String]) -> String {
        var parts: [String] = []
        if !collections.isEmpty { parts.append("the collection \(PromptWording.items(collections))") }
        if !items.isEmpty { parts.append(PromptWording.items(items)) }
        return "\(program) asks for \(parts.joined(separator: " and "))"
    }

    /// Emits Completed (dismissed when nothing opened) and takes the prompt down.
    private func complete(_ prompt: PendingPrompt, unlocked: [ItemReference]?, collections: [String]) async {
        guard let registration = state.withLock({ $0.prompts.removeValue(forKey: prompt.path)?.registration }) else { return }
        var paths = collections.map { DBusValue.objectPath(SecretPaths.collection(id: $0)) }
        for reference in unlocked ?? [] {
            if let item = try? await keychain.item(reference) { paths.append(.objectPath(Self.path(of: item).path)) }
        }
        bus.emit(path: prompt.path, interface: Self.promptInterface, name: "Completed",
                 [.bool(unlocked == nil), .variant(.array(element: "o", paths))])
        await bus.unexport(registration)
    }

    /// The client's program, as the prompt names it: its executable as
    /// the kernel knows it, its command name and pid.
    private func programName(_ client: String) async -> String {
        guard let owner = await bus.owner(of: client), let program = owner.program else { return "a program (\(client))" }
        return program.description
    }
}
