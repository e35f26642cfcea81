import Foundation

/// The seam between the public API and what does the work: the in-process
/// engine (vault, TPM and reader in this process) or the daemon engine (a
/// client of `touchstoned`, whose own in-process engine does the work).
/// Every front end (the CLI, the Secret Service, the ssh-agent, apps) talks
/// to `TouchstoneDevice`, `Keychain` and `AuthenticationContext`, which talk
/// to an engine; none sees which.
///
/// Every operation is one request type (`Calls`, `EngineRequest`) with its
/// handler (`EngineOperation.run`): the in-process engine runs the handler,
/// the daemon engine sends the request to `touchstoned`, which runs the same
/// handler. Errors are the public ones, typed per operation. Authentication
/// yields a grant (the engine's proof of what was shown), which an
/// `AuthenticationContext` may keep for its reuse window and which item
/// reads present.
package protocol Engine: AnyObject, Sendable {
    var configuration: Configuration { get }
    /// Where the public API runs its own steps of an operation (nil: the
    /// caller's executor): the in-process engine's thread.
    var taskExecutor: (any TaskExecutor)? { get }

    /// Carries out one operation. `interaction` answers what it needs of
    /// the person (prompts, scan events); nil: nobody to ask.
    func call<R: EngineOperation>(_ request: R, interaction: (any AuthenticationInteraction)?) async throws(R.Failure) -> R.Response

    /// A grant for `access` from an authenticator that is not one of this
    /// engine's contexts (an `AuthenticationContext` goes through
    /// `Calls.Authenticate`, with its reuse window). Never crosses to the
    /// daemon: only an engine's own checks prove anything to it.
    func grant(for access: AccessControl, reason: String,
               from authenticator: any BiometricAuthenticating) async throws(AuthenticationError) -> any EngineGrant

    /// Releases the reader (the engine opens it again when needed).
    func close() async
}

/// An operation with its handler: what the in-process engine does for the
/// request (in an app's process, or in `touchstoned` for a client).
package protocol EngineOperation: EngineRequest {
    /// Carries out the request on `engine`, on its thread.
    func run(on engine: isolated InProcessEngine,
             interaction: (any AuthenticationInteraction)?) async throws(Failure) -> Response
    /// Whether the daemon releases the shared reader after the operation
    /// (it may have opened it), so that another user's call can claim it.
    static var releasesReader: Bool { get }
    /// The answer when the user's engine cannot be opened at all (nil: the
    /// failure to open is the answer).
    static func unopened(_ configuration: Configuration, readerChoice: String) async -> Response?
}

extension EngineOperation {
    package static var releasesReader: Bool { false }
    package static func unopened(_ configuration: Configuration, readerChoice: String) async -> Response? { nil }
}

extension Engine {
    /// One operation with nobody to ask.
    func call<R: EngineOperation>(_ request: R) async throws(R.Failure) -> R.Response {
        try await call(request, interaction: nil)
    }

    /// Runs `body`, the public API's own steps of one operation, on the
    /// engine's task executor, so that its engine calls need no thread
    /// switch (DedicatedThread). `body` keeps the caller's isolation.
    func operation<R, E: Error>(isolation: isolated (any Actor)? = #isolation,
                                _ body: () async throws(E) -> R) async throws(E) -> R {
        try await withTaskExecutorPreference(taskExecutor, isolation: isolation, operation: body)
    }
}

/// A context's settings, as one authentication reads them.
package struct ContextSettings: Sendable {
    package var interaction: (any AuthenticationInteraction)?
    package var interactionNotAllowed: Bool
    package var touchTimeout: Duration
}
