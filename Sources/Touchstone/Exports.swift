// What an app needs comes with `import Touchstone`: the domain types
// (access controls, fingers, item attributes, scan events, reader and TPM
// selection, the failure values), SecureBytes, and the simulator.
@_exported import TouchstoneClient
@_exported import TouchstoneModel
@_exported import TouchstoneSecure
@_exported import TouchstoneSimulator
