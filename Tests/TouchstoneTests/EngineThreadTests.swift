import Foundation
import Testing
import TestRigs
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

    /// Three devices on one vault, each add blocked in SQLite (another
    /// connection holds the write lock): on the cooperative pool (two
    /// threads here) they would hold every thread until SQLite's busy
    /// timeout (10 s) and fail; on their engines' threads the pool stays
    /// free, a task on it runs, the lock is let go and every add succeeds.
    @Test("three adds blocked on the database's write lock leave the cooperative pool free")
    func blockedAddsDoNotHoldThePool() async throws {
        let rig = try await DeviceRig()
        let devices = [rig.device] + (try await [
            TouchstoneDevice(configuration: rig.device.configuration),
            TouchstoneDevice(configuration: rig.device.configuration),
        ])
        let path = rig.device.configuration.home.appendingPathComponent(Vault.databaseName).path
        let holder = try SQLiteDatabase(path: path, mode: .existing)
        try holder.execute("BEGIN IMMEDIATE")
        let adds = devices.enumerated().map { n, device in
            Task { try await device.keychain.add(Data("s\(n)".utf8), service: "blocked", account: "a\(n)", access: .none) }
        }
        // Give the adds time to reach the lock (they are blocked there from
        // then on); then a task on the pool must still run.
        try await Task.sleep(for: .milliseconds(300))
        let ran = await Task.detached { true }.value
        try holder.execute("COMMIT")
        #expect(ran)
        for add in adds { try await add.value }
        #expect(try await rig.device.keychain.items(service: "blocked").count == 3)
    }
}
