import Foundation
import Testing
@testable import TouchstoneFingerprint

/// Runs `body` and returns the `FingerprintError` it throws; fails the
/// test if it returns normally or throws something else.
func fingerprintError(_ body: () async throws -> Void,
                      sourceLocation: SourceLocation = #_sourceLocation) async -> FingerprintError? {
    do {
        try await body()
        Issue.record("expected a FingerprintError, but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as FingerprintError {
        return error
    } catch {
        Issue.record("expected a FingerprintError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Waits until `condition` holds (polling every 10 ms), failing after `limit`.
func waitUntil(_ what: String, limit: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { throw RigError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

extension VirtualRig {
    /// Queues the touches of a full enrolment of print `id`.
    func queueEnrollment(of id: String) async throws {
        for _ in 0..<reader.enrollStages { try await send("SCAN \(id)") }
    }

    /// Enrols `finger` with touches of print `id` through `backend` directly.
    func enroll(_ finger: Finger, as id: String, user: String = "alice") async throws -> EnrolledPrint {
        try await queueEnrollment(of: id)
        return try await backend.enroll(finger, username: user, on: reader.identity,
                                        timeout: .seconds(60), events: { _ in })
    }

    /// A `FingerprintEnrollment` for `user` with a file store in the rig's directory.
    func enrollment(user: String = "alice") throws -> FingerprintEnrollment {
        FingerprintEnrollment(backend: backend, store: try FileEnrollmentStore(root: stateDirectory()),
                              user: user, reader: reader)
    }
}

/// Runs `body` with a fresh virtual reader, closing it and removing its
/// directory afterwards, whether `body` returns or throws.
func withRig<T>(_ kind: VirtualRig.Kind, _ body: (VirtualRig) async throws -> T) async throws -> T {
    let rig = try await VirtualRig(kind)
    do {
        let result = try await body(rig)
        await rig.finish()
        return result
    } catch {
        await rig.finish()
        throw error
    }
}
