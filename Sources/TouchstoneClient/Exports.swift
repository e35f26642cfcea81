// The domain types and SecureBytes, for every file of this module and its users.
@_exported import TouchstoneModel
@_exported import TouchstoneSecure
