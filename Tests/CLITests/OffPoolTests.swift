import Foundation
import Testing
import TestRigs

@Suite("offPool: a test's blocking steps on a thread of their own")
struct OffPoolTests {
    @Test("the body runs on a thread of its own, not the pool's, inside the calling test (its task-locals: Test.current); its value and its error come back; blockingTest runs its body there too")
    func threadOfItsOwn() async throws {
        #expect(Self.threadName() != "test-blocking")
        #expect(try await offPool { Self.threadName() } == "test-blocking")
        let name = Test.current?.name
        #expect(name != nil)
        #expect(try await offPool { Test.current?.name } == name)
        await #expect(throws: RigFailure.self) { try await offPool { throw RigFailure("thrown off the pool") } }
        #expect(try await blockingTest { Self.threadName() } == "test-blocking")
    }

    /// The calling thread's name (/proc/thread-self/comm).
    static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
