import CSQLite
import Foundation
import TestRigs
import TouchstoneSecure
import TouchstoneTPM

/// `TouchstoneBench vault`: the vault against plain SQLite at each size,
/// TPM excluded and included. One `TPM` connection serves every vault; it
/// is closed before this returns, so the simulator can be shut down.
func runVaultBenchmark(_ options: VaultBenchOptions, on rig: SwtpmRig) throws -> VaultBenchReport {
    let loadAverage = MachineInfo.loadAverage()
    let tpm = try TPM(tcti: rig.swtpm.tcti)
    // A wrong passcode is never given here, but the run makes thousands of
    // passcode authorisations: keep the simulator's lockout out of the way.
    try tpm.setDictionaryAttackParameters(maxTries: 10_000, recoveryTime: 1, lockoutRecovery: 1)
    let passcode = PasscodeAuth(passcode: SecureBytes.random(count: 16))
    let peakIsPerPhase = PeakMemory.resetPeak()
    let folder = try rig.subdirectory("vault")
    var cases: [VaultCaseResult] = []
    for size in options.sizes {
        for mode in VaultMode.allCases {
            let measurement = VaultCaseMeasurement(
                size: size, mode: mode, gets: mode == .tpmExcluded ? size : min(size, options.tpmSample),
                block: options.block, folder: folder, tpm: tpm, passcode: passcode)
            cases.append(try measurement.run())
            progress("\(size) items, \(mode.rawValue): done")
        }
    }
    return VaultBenchReport(machine: MachineInfo.current(tpm2ToolsVersion: nil, loadAverage: loadAverage),
                            sqliteVersion: String(cString: sqlite3_libversion()),
                            sizes: options.sizes, tpmSample: options.tpmSample, block: options.block,
                            peakIsPerPhase: peakIsPerPhase, cases: cases)
}

/// A line on stderr, so a long run shows where it is without mixing into
/// the report on stdout.
func progress(_ message: String) {
    FileHandle.standardError.write(Data("touchstone-bench: \(message)\n".utf8))
}
