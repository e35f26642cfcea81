import Foundation
import Testing
import TestRigs
import TouchstoneGLib
@testable import Touchstone
@testable import TouchstoneVault

/// The in-process engine runs its blocking work (TPM commands, SQLite) on a
/// thread of its own, never on Swift's cooperative pool.
@Suite("The engine's own thread (swtpm)", .serialized)
struct EngineThreadTests {
    @Test("vault and TPM work runs on the engine's thread")
    func backendWorkRunsOnTheEngineThread() async throws {
        let rig = try await DeviceRig()
        #expect(await rig.device.engineRunsOnItsThread())
        #expect(!rig.device.isOnEngineThread)  // the test itself is on the pool
    }

    @Test("an engine hosted on a GLib loop's thread (as the Secret Service provider's is, on its D-Bus thread) runs its vault and TPM work on that thread, and the loop's own jobs still run")
    func hostedOnALoop() async throws {
        let rig = try await DeviceRig()
        let loop = GLibLoopThread(name: "test-loop", context: .own)
        defer { loop.stop() }
        try await TouchstoneDevice.withDevice(rig.device.configuration, engineOn: loop) { device in
            #expect(try await device.withBackend { _, _ in loop.isCurrent })
            #expect(await device.engineRunsOnItsThread())
            try await device.keychain.add(Data("hosted".utf8), service: "hosted", account: "a", access: .none)
            #expect(try await device.keychain.items(service: "hosted").count == 1)
            #expect(await loop.run { loop.isCurrent })
        }
        #expect(!loop.isCurrent)
    }

    /// Three devices on one vault, each add blocked in SQLite (another
    /// connection holds the write lock). The test runs on an executor of
    /// its own (one thread, so other suites' load cannot delay it): were
    /// the engine's work on the caller's executor, the blocked adds would
    /// hold that thread until SQLite's busy timeout (10 s) and fail; on
    /// their engines' threads the test's thread stays free, the probe task
    /// runs, the lock is let go and every add succeeds.
    @Test("three adds blocked on the database's write lock leave the caller's executor free")
    func blockedAddsDoNotHoldTheCaller() async throws {
        let rig = try await DeviceRig()
        let devices = [rig.device] + (try await [
            TouchstoneDevice(configuration: rig.device.configuration),
            TouchstoneDevice(configuration: rig.device.configuration),
        ])
        let path = rig.device.configuration.home.appendingPathComponent(Vault.databaseName).path
        let executor = DedicatedThread.make()
        defer { executor.recycle() }
        try await withTaskExecutorPreference(executor) {
            let holder = try SQLiteDatabase(path: path, mode: .existing)
            try holder.execute("BEGIN IMMEDIATE")
            let adds = devices.enumerated().map { n, device in
                Task(executorPreference: executor) {
                    try await device.keychain.add(Data("s\(n)".utf8), service: "blocked", account: "a\(n)", access: .none)
                }
            }
            // Time for the adds to reach the lock (they stay blocked there);
            // then a task on this executor must still run.
            try await Task.sleep(for: .milliseconds(300))
            let ran = await Task(executorPreference: executor) { executor.isCurrent }.value
            try holder.execute("COMMIT")
            #expect(ran)
            for add in adds { try await add.value }
        }
        #expect(try await rig.device.keychain.items(service: "blocked").count == 3)
    }
}
