#if TOUCHSTONE_TEST_SUPPORT
import TouchstoneTPM
import TouchstoneVault

// Test accessors, in debug builds only (TOUCHSTONE_TEST_SUPPORT): the
// tests reach the in-process engine's vault and TPM to set up and check
// what the public API does not show.

extension TouchstoneDevice {
    /// Runs `body` with the engine's vault and TPM, on the engine's thread.
    func withBackend<R: Sendable>(_ body: @Sendable (Vault, TPM) throws -> R) async throws -> R {
        guard let engine = engine as? InProcessEngine else { throw BackendFailure.invalidInput("not an in-process device") }
        return try await engine.withBackend(body)
    }

    /// Whether the engine's isolated work runs on its own thread.
    func engineRunsOnItsThread() async -> Bool {
        guard let engine = engine as? InProcessEngine else { return false }
        return await engine.backendRunsOnItsThread()
    }

    /// Whether the caller runs on the engine's thread.
    var isOnEngineThread: Bool { (engine as? InProcessEngine)?.thread.isCurrent ?? false }
}

extension InProcessEngine {
    /// Whether the vault and TPM work of `withBackend` runs on the engine's thread.
    func backendRunsOnItsThread() -> Bool { thread.isCurrent }

    func withBackend<R: Sendable>(_ body: @Sendable (Vault, TPM) throws -> R) throws -> R {
        try body(vault, tpm)
    }
}
#endif
