import Foundation
import Touchstone
import TouchstoneSecure

/// `touchstone import --from-secret-service`: every collection and item of
/// another provider (`SecretServiceSource`) into this vault, each item in
/// a collection of the same name and label (`CollectionBook`), with its
/// label, attributes, secret, content type and times. Nothing in the source
/// changes (a collection it unlocked is locked again; an item it unlocked
/// was unlocked for its connection only). Running it again adds nothing
/// twice.
package struct SecretServiceImport: Sendable {
    let source: SecretServiceSource
    let device: TouchstoneDevice
    /// The access of the new items.
    let access: AccessControl
    let dryRun: Bool
    /// How long a source's unlock prompt may wait for the person.
    let unlockTimeout: Duration
    /// Progress for the person (never a secret).
    let log: @Sendable (String) -> Void
    /// Opens the items here whose access asks for authentication, to
    /// compare their secrets with the source's: one context for the whole
    /// import, its authentication kept for the longest reuse window, so
    /// the person touches once (nil: such items are not compared).
    let comparing: AuthenticationContext?
    /// Why the person's authentication for comparing was refused, once it
    /// was: it is not asked again in this import (a person who is not
    /// there is not waited for once per item).
    let comparingRefused = Locked<String?>(nil)

    /// `context`: a context that asks the person (the terminal's), for
    /// the items here that need authentication; nil: they are not compared.
    package init(source: SecretServiceSource, device: TouchstoneDevice, access: AccessControl, dryRun: Bool,
                 unlockTimeout: Duration, comparingWith context: AuthenticationContext? = nil,
                 log: @escaping @Sendable (String) -> Void) {
        self.source = source
        self.device = device
        self.access = access
        self.dryRun = dryRun
        self.unlockTimeout = unlockTimeout
        context?.allowableReuseDuration = AuthenticationContext.maximumReuseDuration
        comparing = context
        self.log = log
    }

    /// One item that was not added, and why.
    package struct Entry: Sendable, Encodable, Equatable {
        package let collection: String
        package let label: String
        package let why: String
    }

    /// What the import found, added, skipped and failed.
    package struct Outcome: Sendable, Encodable {
        package var found = 0
        package var added = 0
        package var skipped: [Entry] = []
        package var failed: [Entry] = []
        /// Collections made here (their labels).
        package var collectionsMade: [String] = []
        /// The alias `default` set to the collection the source's names (its label), if it was.
        package var defaultAlias: String?
        package var dryRun = false
    }

    /// Items read per GetSecrets.
    static let batch = 64

    package func run() async throws(SecretServiceSource.Failure) -> Outcome {
        var outcome = Outcome()
        outcome.dryRun = dryRun
        let folder = device.configuration.home.path + "/secret-service"
        var (book, problem) = CollectionBook.load(from: folder, now: Date())
        if let problem { log(problem) }
        let collections = try await source.collections()
        let sourceDefault = await source.alias("default")
        var relocked: [String] = []
        do throws(SecretServiceSource.Failure) {
            try await importCollections(collections, sourceDefault: sourceDefault, book: &book, relocked: &relocked, &outcome)
        } catch {
            await source.lock(relocked)
            await source.close()
            throw error
        }
        // The source as it was found: what this import unlocked, locked again.
        await source.lock(relocked)
        if !dryRun {
            do { try book.save(to: folder) } catch {
                log("the collections' labels and aliases could not be saved in \(folder): \(error); the items keep their collections")
            }
        }
        await source.close()
        return outcome
    }

    private func importCollections(_ collections: [SecretServiceSource.Collection], sourceDefault: String?, book: inout CollectionBook,
                                   relocked: inout [String], _ outcome: inout Outcome) async throws(SecretServiceSource.Failure) {
        for collection in collections {
            let paths = try await source.items(of: collection.path)
            outcome.found += paths.count
            let sourceID = String(collection.path.split(separator: "/").last ?? "")
            let name = collection.label.isEmpty ? sourceID : collection.label
            if sourceID == CollectionBook.session {
                for path in paths {
                    let label = (try? await source.item(path).label) ?? path
                    outcome.skipped.append(Entry(collection: name, label: label, why: "the source's session collection is kept in memory only"))
                }
                continue
            }
            // The collection here: the source's id when it can be one, else one from its label.
            let target = CollectionBook.isValidID(sourceID) ? sourceID : book.newID(for: name)
            if book.records[target] == nil {
                let now = Date()
                book.add(CollectionBook.Record(id: target, label: collection.label, created: now, modified: now))
                outcome.collectionsMade.append(name)
            }
            if collection.path == sourceDefault, book.aliases["default"] != target {
                book.setAlias("default", to: target)
                outcome.defaultAlias = name
            }
            if collection.locked {
                log("unlocking “\(name)” in \(source.ownerProgram ?? "the source"): answer its prompt")
                let unlocked: Bool
                do { unlocked = try await source.unlock([collection.path], timeout: unlockTimeout).contains(collection.path) } catch {
                    for path in paths { outcome.failed.append(Entry(collection: name, label: path, why: error.description)) }
                    continue
                }
                guard unlocked else {
                    for path in paths {
                        outcome.failed.append(Entry(collection: name, label: path, why: "its collection stayed locked (the source's prompt was dismissed)"))
                    }
                    continue
                }
                relocked.append(collection.path)
            }
            var start = 0
            while start < paths.count {
                let slice = Array(paths[start..<min(start + Self.batch, paths.count)])
                start += Self.batch
                try await importBatch(slice, from: name, into: target, &outcome)
            }
        }
    }

    private func importBatch(_ paths: [String], from name: String, into target: String, _ outcome: inout Outcome) async throws(SecretServiceSource.Failure) {
        var items: [String: SecretServiceSource.Item] = [:]
        for path in paths {
            do { items[path] = try await source.item(path) } catch {
                outcome.failed.append(Entry(collection: name, label: path, why: error.description))
            }
        }
        var secrets = try await source.secrets(paths)
        // Items locked by themselves (their collection open): unlocked
        // through the source's own prompt, one for the batch. Such an
        // unlock is the import's connection's, and ends with it (they are
        // not locked again here: KeePassXC would lock their whole database).
        let locked = paths.filter { secrets[$0] == nil && items[$0]?.locked == true }
        var stayedLocked = "it stayed locked (the source's prompt was dismissed)"
        if !locked.isEmpty {
            log("unlocking \(locked.count == 1 ? "an item" : "\(locked.count) items") of “\(name)” in \(source.ownerProgram ?? "the source"): answer its prompt")
            do {
                let opened = try await source.unlock(locked, timeout: unlockTimeout)
                if !opened.isEmpty { secrets.merge(try await source.secrets(locked.filter(opened.contains))) { _, again in again } }
            } catch {
                stayedLocked = error.description
            }
        }
        for path in paths {
            guard let item = items[path] else { continue }
            let label = item.label.isEmpty ? path : item.label
            guard let (secret, contentType) = secrets[path] else {
                let why = item.locked ? stayedLocked : "the source gave no secret for it (locked?)"
                outcome.failed.append(Entry(collection: name, label: label, why: why))
                continue
            }
            switch await add(item, secret: secret, contentType: contentType, to: target) {
            case .added: outcome.added += 1
            case .skipped(let why): outcome.skipped.append(Entry(collection: name, label: label, why: why))
            case .failed(let why): outcome.failed.append(Entry(collection: name, label: label, why: why))
            }
        }
    }

    private enum Step { case added, skipped(String), failed(String) }

    /// One item: checked against the limits, looked for here (the same
    /// label, attributes and secret: there already), added.
    private func add(_ item: SecretServiceSource.Item, secret: SecureBytes, contentType: String, to target: String) async -> Step {
        guard secret.count <= Keychain.maximumSecretSize else {
            return .failed("its secret is \(secret.count) bytes; Touchstone keeps at most \(Keychain.maximumSecretSize): not imported (nothing was cut)")
        }
        guard item.attributes.count < Keychain.maximumAttributeCount else {
            return .failed("it has \(item.attributes.count) attributes; at most \(Keychain.maximumAttributeCount - 1) are kept")
        }
        let stored: [String: String]
        switch SecretServiceProvider.storedAttributes(item.attributes, in: target) {
        case .success(let set): stored = set
        case .failure(let error): return .failed(error.message)
        }
        let keychain = device.keychain
        do throws(KeychainError) {
            let here = try await keychain.items(matching: stored).filter {
                SecretServiceProvider.collection(of: $0) == target && ($0.item.attributes?.label ?? "") == item.label
                    && ($0.item.attributes.map(SecretServiceProvider.clientAttributes) ?? [:]) == item.attributes
            }
            func notCompared(_ why: String) -> Step {
                .skipped("an item of this label and attributes is there already, and its secret could not be compared: \(why)")
            }
            for candidate in here {
                // One that no longer opens (the fingers changed) holds no
                // secret to keep: the source's comes in beside it.
                guard candidate.item.state == .ok else { continue }
                let context: AuthenticationContext
                if candidate.item.attributes?.access.flags.isEmpty == true {
                    context = device.makeContext()
                    context.interactionNotAllowed = true
                } else if let comparing {
                    if let why = comparingRefused.withLock({ $0 }) { return notCompared(why) }
                    context = comparing
                } else {
                    return .skipped("an item of this label and attributes is there already (its access asks for a touch: its secret was not compared)")
                }
                let existing: SecureBytes
                do throws(KeychainError) {
                    existing = try await keychain.get(candidate.reference, context: context,
                                                      reason: "touchstone import compares an item here with the source's")
                } catch {
                    if context === comparing {
                        switch error {
                        case .authFailed, .authentication, .userCanceled, .interactionNotAllowed:
                            comparingRefused.withLock { $0 = $0 ?? error.description }
                        default: break  // this item's own trouble: the next is still compared
                        }
                        return notCompared(error.description)
                    }
                    continue
                }
                if existing == secret { return .skipped("there already (the same label, attributes and secret)") }
            }
            if dryRun { return .added }
            _ = try await keychain.add(secret, attributes: stored, label: item.label,
                                       contentType: contentType.isEmpty || contentType == "text/plain" ? nil : contentType,
                                       access: access, created: item.created, modified: item.modified)
            return .added
        } catch {
            return .failed(error.description)
        }
    }
}
