// The parser speaks the model's types: access controls, fingers, TPM and
// reader selection, the simulator's retries and errors.
@_exported import TouchstoneModel
