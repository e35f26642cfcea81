import Foundation
import Synchronization

/// LAContext for Linux: evaluates a policy with a finger (matched on this
/// machine) or the passcode (checked by the TPM), and opens keychain items
/// with what it proved.
///
/// Use a fresh context per authentication. Within `allowableReuseDuration`
/// (at most 300 s) a context opens further items without another touch.
/// `invalidate()` ends it: an evaluation in flight fails with `appCancel`,
/// later calls with `invalidContext`.
public final class AuthenticationContext: Sendable {
    public static let maximumReuseDuration: TimeInterval = 300
    /// Consecutive failed matches that lock biometry until the passcode.
    public static let maximumBiometricFailures = 5

    let engine: any Engine
    private let state = Mutex(State())

    /// An authentication in flight: its outcome, the engine's error kept.
    private typealias Evaluation = Task<Result<any EngineGrant, AuthenticationError>, Never>

    private struct State: Sendable {
        var interaction: (any AuthenticationInteraction)?
        var interactionNotAllowed = false
        var reuseDuration: TimeInterval = 0
        var touchTimeout: Duration = .seconds(30)
        var biometryType: BiometryType = .none
        var invalidated = false
        var inFlight: Evaluation?
        /// The last success, kept only while the reuse window is open.
        var kept: (date: Date, grant: any EngineGrant)?
    }

    init(engine: any Engine) { self.engine = engine }

    /// Prompts and passcode entry; nil: no interaction is possible.
    public var interaction: (any AuthenticationInteraction)? {
        get { state.withLock { $0.interaction } }
        set { state.withLock { $0.interaction = newValue } }
    }

    /// When true, anything that would prompt fails with `notInteractive`.
    public var interactionNotAllowed: Bool {
        get { state.withLock { $0.interactionNotAllowed } }
        set { state.withLock { $0.interactionNotAllowed = newValue } }
    }

    /// How long a success here is reused without another touch; capped at
    /// 300 s (touchIDAuthenticationAllowableReuseDuration). A success is
    /// kept (with the passcode class key it opened, for the in-process
    /// engine) only while this is above 0; setting it to 0 drops one kept
    /// before.
    public var allowableReuseDuration: TimeInterval {
        get { state.withLock { $0.reuseDuration } }
        set {
            state.withLock {
                $0.reuseDuration = min(max(newValue, 0), Self.maximumReuseDuration)
                if $0.reuseDuration == 0 { $0.kept = nil }
            }
        }
    }

    /// How long to wait for a touch.
    public var touchTimeout: Duration {
        get { state.withLock { $0.touchTimeout } }
        set { state.withLock { $0.touchTimeout = newValue } }
    }

    /// Set by `canEvaluate`: `.fingerprint` when a reader is usable.
    public var biometryType: BiometryType { state.withLock { $0.biometryType } }

    /// The enrolled-finger set's opaque state (evaluatedPolicyDomainState):
    /// it changes whenever a finger is added or removed, and never returns
    /// to an earlier value. Nil without a passcode.
    public func domainState() async throws(AuthenticationError) -> Data? {
        try await engine.call(Calls.DomainState())
    }

    /// Ends the context: an evaluation in flight fails with `appCancel`;
    /// every later call fails with `invalidContext`. Drops a kept success.
    public func invalidate() {
        let task = state.withLock { state -> Evaluation? in
            state.invalidated = true
            state.kept = nil
            return state.inFlight
        }
        task?.cancel()
    }

    // MARK: - Availability (never prompts)

    /// What `policy` can use now. Opens the reader to check it is there (no
    /// prompt); does not touch the TPM's dictionary-attack state.
    public func canEvaluate(_ policy: AuthenticationPolicy) async -> Availability {
        let availability: Availability
        do {
            availability = try await engine.call(Calls.Availability(policy))
        } catch {
            availability = .unavailable(reason: error.message ?? "\(error)")
        }
        state.withLock { $0.biometryType = availability == .available(.fingerprint) ? .fingerprint : .none }
        return availability
    }

    // MARK: - Evaluate

    /// Authenticates for `policy`, showing `reason`. Returns on success.
    public func evaluate(_ policy: AuthenticationPolicy, reason: String) async throws(AuthenticationError) {
        _ = try await grant(for: policy == .deviceOwnerAuthentication ? .userPresence : .biometryAny, reason: reason)
    }

    /// A grant that satisfies `access`: the kept one within the reuse
    /// window, or a new authentication (a touch and/or the passcode).
    func grant(for access: AccessControl, reason: String) async throws(AuthenticationError) -> any EngineGrant {
        let engine = self.engine
        let task: Evaluation = try state.withLock { (state) throws(AuthenticationError) in
            guard !state.invalidated else { throw .invalidContext }
            if let kept = state.kept {
                if Date().timeIntervalSince(kept.date) > state.reuseDuration {
                    state.kept = nil  // expired: not kept any longer
                } else if kept.grant.satisfies(access) {
                    return Task { .success(kept.grant) }
                }
            }
            let request = Calls.Authenticate(access, reason: reason, interactionNotAllowed: state.interactionNotAllowed,
                                             touchTimeout: state.touchTimeout, reuse: state.reuseDuration)
            let interaction = state.interaction
            let task = Task(executorPreference: engine.taskExecutor) { () async -> Result<any EngineGrant, AuthenticationError> in
                do throws(AuthenticationError) {
                    return .success(try await engine.call(request, interaction: interaction))
                } catch {
                    return .failure(error)
                }
            }
            state.inFlight = task
            return task
        }
        do throws(AuthenticationError) {
            let grant = try await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }.get()
            state.withLock {
                $0.inFlight = nil
                // Kept only for reuse: with no window the grant goes with
                // the caller's copy.
                if !$0.invalidated && $0.reuseDuration > 0 { $0.kept = (Date(), grant) }
            }
            return grant
        } catch {
            let cancelledByApp = state.withLock { state -> Bool in state.inFlight = nil; return state.invalidated }
            if cancelledByApp { throw .appCancel }
            throw error
        }
    }

    /// Whether this context is one of `engine`'s.
    func belongs(to engine: any Engine) -> Bool { self.engine === engine }

    #if TOUCHSTONE_TEST_SUPPORT
    /// Whether a success is kept for reuse (tests).
    var holdsProof: Bool { state.withLock { $0.kept != nil } }
    #endif
}
