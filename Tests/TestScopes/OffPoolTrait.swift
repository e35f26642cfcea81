// Built with every target: a build without swift-testing (the package's
// `--static-swift-stdlib` release build) compiles it empty.
#if canImport(Testing)
import TestRigs
import Testing

/// `@Suite(.offPool)`: each test of the suite runs as `blockingTest` runs a
/// body, on a thread of its own and within the bound of blocking bodies at
/// once, never on the cooperative pool. For suites of synchronous tests
/// that wait on a swtpm or a child: run on the pool (two threads on two
/// cores), a hundred of them one after another held it for a minute and a
/// half, and every task queued behind them (a daemon session's, a D-Bus
/// reply's) waited as long.
package struct OffPoolTrait: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    /// Each test case, not the suite as a whole.
    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { testCase == nil ? nil : self }

    package func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await blockingTestScope(function)
    }
}

extension Trait where Self == OffPoolTrait {
    /// Runs each test off the cooperative pool (`OffPoolTrait`).
    package static var offPool: Self { OffPoolTrait() }
}
#endif
